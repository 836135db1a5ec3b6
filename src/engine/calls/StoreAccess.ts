/**
 * The engine's way to the store: every call bounded by the locker's `commandTimeout`, and the
 * store's optional capabilities, detected once.
 */
import type { StoreOperation } from '../../errors/errors.js';
import {
  batchExtendOf,
  freedHintsOf,
  keyCheckOf,
  queueingOf,
  wakeUpOf,
  type BatchExtendStore,
  type KeyCheckingStore,
  type QueueingStore,
  type WakeUpStore,
} from '../../store/capabilities.js';
import type { LockStore } from '../../store/LockStore.js';
import { CallDeadlines } from './CallDeadlines.js';
import { callStore, sendRequest, type CallTracker, type StoreCall, type StoreCallHandlers, type StoreRequest } from './storeCall.js';

export class StoreAccess implements CallTracker {
  readonly deadlines: CallDeadlines;
  /** The store's line with hand-off, if it has one. */
  readonly queue: (LockStore & QueueingStore) | undefined;
  /** The store's wake-up signals, if it has them (only with a line). */
  readonly wakeUp: (LockStore & QueueingStore & WakeUpStore) | undefined;
  /** A store without a line: its hints that a key is free, if it gives them. */
  readonly hints: (LockStore & WakeUpStore) | undefined;
  readonly batch: (LockStore & BatchExtendStore) | undefined;
  readonly keyCheck: (LockStore & KeyCheckingStore) | undefined;

  constructor(
    readonly store: LockStore,
    commandTimeout: number,
  ) {
    this.deadlines = new CallDeadlines(commandTimeout);
    this.queue = queueingOf(store);
    this.wakeUp = wakeUpOf(store);
    this.hints = freedHintsOf(store);
    this.batch = batchExtendOf(store);
    this.keyCheck = keyCheckOf(store);
  }

  /** Calls whose store promise has not settled yet (for close()). */
  private inFlight = 0;
  private onIdle: (() => void) | undefined;

  /** Runs one store call within `commandTimeout` (see ./storeCall.ts); `now` if the caller has it. */
  call<T>(operation: StoreOperation, key: string, run: () => Promise<T>, handlers: StoreCallHandlers<T>, now?: number): StoreCall {
    this.inFlight++;
    return callStore(this.deadlines, operation, key, run, handlers, this, now);
  }

  /** {@link StoreAccess.call} for a request that sends itself (see ./storeCall.ts). */
  send<T>(operation: StoreOperation, key: string, request: StoreRequest<T>, now?: number): StoreCall {
    this.inFlight++;
    return sendRequest(this.deadlines, operation, key, request, this, now);
  }

  callSettled(): void {
    if (--this.inFlight === 0) this.onIdle?.();
  }

  /**
   * Resolves once every call made so far was settled by the store, or after `commandTimeout` at
   * the latest (a frozen store may never answer an abandoned call). Never rejects.
   */
  settledOrTimedOut(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.deadlines.timeoutMs);
      timer.unref?.();
      const previous = this.onIdle;
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.onIdle = () => {
        previous?.();
        done();
      };
    });
  }
}
