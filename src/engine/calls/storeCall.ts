/**
 * Bounds one store call by the locker's `commandTimeout` and tells apart the ways it can end for
 * the caller: answered in time, failed in time (or timed out), or answered after the caller
 * stopped caring (timed out or abandoned). The last one matters for acquire: a lock granted to
 * nobody must be given back. `settled` hears of the store's actual answer whenever it comes, so a
 * call that must follow this one on the store (a waiter leaving the line) can wait for it.
 */
import { LockStoreError, type StoreOperation } from '../../errors/errors.js';
import type { CallDeadlines } from './CallDeadlines.js';

export interface StoreCallHandlers<T> {
  /** The store answered in time and the call was not abandoned. */
  value(value: T): void;
  /** The store failed or did not answer in time. */
  error(error: LockStoreError): void;
  /** The store answered after a timeout or after {@link StoreCall.abandon}. */
  late?(value: T): void;
  /** The store's promise settled (answered or failed), in time or not; called after the others. */
  settled?(): void;
}

export interface StoreCall {
  /** The caller no longer wants the answer; a later answer goes to `late`. */
  abandon(): void;
}

export function callStore<T>(
  deadlines: CallDeadlines,
  operation: StoreOperation,
  key: string,
  run: () => Promise<T>,
  handlers: StoreCallHandlers<T>,
): StoreCall {
  let promise: Promise<T>;
  try {
    // Promise.resolve returns a native promise as it is, and adopts a thenable or a plain value
    // from a store that breaks the contract, so nothing below can throw.
    promise = Promise.resolve(run());
  } catch (error) {
    promise = Promise.reject(error);
  }
  const deadline = deadlines.track(() => {
    handlers.error(new LockStoreError(key, operation, `no answer within commandTimeout (${deadlines.timeoutMs} ms)`));
  });
  promise.then(
    (value) => {
      if (deadline.settled) handlers.late?.(value);
      else {
        deadlines.settle(deadline);
        handlers.value(value);
      }
      handlers.settled?.();
    },
    (error: unknown) => {
      if (!deadline.settled) {
        deadlines.settle(deadline);
        handlers.error(new LockStoreError(key, operation, error instanceof Error ? error.message : String(error), error));
      }
      handlers.settled?.();
    },
  );
  return {
    abandon() {
      if (!deadline.settled) deadlines.settle(deadline);
    },
  };
}
