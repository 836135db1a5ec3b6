/**
 * One store call, bounded by the locker's `commandTimeout`, telling apart the ways it can end for
 * the caller: answered in time, failed in time (or timed out), or answered after the caller
 * stopped caring (timed out or abandoned). The last one matters for acquire: a lock granted to
 * nobody must be given back. `settled` hears of the store's actual answer whenever it comes, so a
 * call that must follow this one on the store (a waiter leaving the line) can wait for it.
 */
import { LockStoreError, storeFailure, type StoreOperation } from '../../errors/errors.js';
import type { CallDeadlines, Tracked } from './CallDeadlines.js';

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

/**
 * A store call as one object: it sends itself and hears how it ended. For the calls every
 * acquisition makes (the attempt, the release), where a `run` closure and a handlers object of
 * closures per call cost more than the rest of the call.
 */
export interface StoreRequest<T> extends StoreCallHandlers<T> {
  /** Sends the call to the store (once, at once). */
  send(): Promise<T>;
}

export interface StoreCall {
  /** The caller no longer wants the answer; a later answer goes to `late`. */
  abandon(): void;
}

/** Told when a call's store promise settles (the locker counts calls in flight for close()). */
export interface CallTracker {
  callSettled(): void;
}

class PendingCall<T> implements StoreCall, Tracked {
  settled = false;
  dueAt = 0;
  next: Tracked | undefined = undefined;

  constructor(
    private readonly deadlines: CallDeadlines,
    private readonly operation: StoreOperation,
    private readonly key: string,
    private readonly handlers: StoreCallHandlers<T>,
    private readonly tracker: CallTracker | undefined,
  ) {}

  expire(): void {
    this.handlers.error(new LockStoreError(this.key, this.operation, `no answer within commandTimeout (${this.deadlines.timeoutMs} ms)`));
  }

  abandon(): void {
    if (!this.settled) this.deadlines.settle(this);
  }

  answered(value: T): void {
    if (this.settled) this.handlers.late?.(value);
    else {
      this.deadlines.settle(this);
      this.handlers.value(value);
    }
    this.done();
  }

  failed(error: unknown): void {
    if (!this.settled) {
      this.deadlines.settle(this);
      this.handlers.error(storeFailure(this.key, this.operation, error));
    }
    this.done();
  }

  /** The store settled the call: what must follow it goes out first, then the call stops counting as in flight. */
  private done(): void {
    try {
      this.handlers.settled?.();
    } finally {
      this.tracker?.callSettled();
    }
  }
}

/**
 * Runs `run()` (the store call) and tracks its deadline from `now` (default: the current time;
 * callers that just read the clock pass theirs).
 */
export function callStore<T>(
  deadlines: CallDeadlines,
  operation: StoreOperation,
  key: string,
  run: () => Promise<T>,
  handlers: StoreCallHandlers<T>,
  tracker?: CallTracker,
  now?: number,
): StoreCall {
  return tracked(deadlines, operation, key, sent(run, undefined), handlers, tracker, now);
}

/** {@link callStore} for a request that sends itself. */
export function sendRequest<T>(
  deadlines: CallDeadlines,
  operation: StoreOperation,
  key: string,
  request: StoreRequest<T>,
  tracker?: CallTracker,
  now?: number,
): StoreCall {
  return tracked(deadlines, operation, key, sent(request.send, request), request, tracker, now);
}

/** The store's promise for `send` (called on `self`); a synchronous throw becomes a rejection. */
function sent<T>(send: (this: unknown) => Promise<T>, self: unknown): Promise<T> {
  try {
    // Promise.resolve returns a native promise as it is, and adopts a thenable or a plain value
    // from a store that breaks the contract, so nothing below can throw.
    return Promise.resolve(send.call(self));
  } catch (error) {
    return Promise.reject(error);
  }
}

function tracked<T>(
  deadlines: CallDeadlines,
  operation: StoreOperation,
  key: string,
  promise: Promise<T>,
  handlers: StoreCallHandlers<T>,
  tracker: CallTracker | undefined,
  now: number | undefined,
): StoreCall {
  const call = new PendingCall(deadlines, operation, key, handlers, tracker);
  deadlines.track(call, now);
  promise.then(
    (value) => call.answered(value),
    (error: unknown) => call.failed(error),
  );
  return call;
}
