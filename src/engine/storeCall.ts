/**
 * Bounds one store call by `commandTimeout` and tells apart the three ways it can end for the
 * caller: answered in time, failed in time (or timed out), or answered after the caller stopped
 * caring (timed out or abandoned). The last one matters for acquire: a lock granted to nobody must
 * be given back.
 */
import { LockStoreError, type StoreOperation } from '../errors.js';

export interface StoreCallHandlers<T> {
  /** The store answered in time and the call was not abandoned. */
  value(value: T): void;
  /** The store failed or did not answer in time. */
  error(error: LockStoreError): void;
  /** The store answered after a timeout or after {@link StoreCall.abandon}. */
  late?(value: T): void;
}

export interface StoreCall {
  /** The caller no longer wants the answer; a later answer goes to `late`. */
  abandon(): void;
}

export function callStore<T>(
  operation: StoreOperation,
  key: string,
  timeoutMs: number,
  run: () => Promise<T>,
  handlers: StoreCallHandlers<T>,
): StoreCall {
  let pending = true;
  let promise: Promise<T>;
  try {
    promise = run();
  } catch (error) {
    promise = Promise.reject(error);
  }
  const timer = setTimeout(() => {
    if (!pending) return;
    pending = false;
    handlers.error(new LockStoreError(key, operation, `no answer within commandTimeout (${timeoutMs} ms)`));
  }, timeoutMs);
  promise.then(
    (value) => {
      if (pending) {
        pending = false;
        clearTimeout(timer);
        handlers.value(value);
      } else {
        handlers.late?.(value);
      }
    },
    (error: unknown) => {
      if (!pending) return;
      pending = false;
      clearTimeout(timer);
      handlers.error(new LockStoreError(key, operation, error instanceof Error ? error.message : String(error), error));
    },
  );
  return {
    abandon() {
      if (!pending) return;
      pending = false;
      clearTimeout(timer);
    },
  };
}
