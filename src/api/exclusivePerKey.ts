/**
 * `exclusivePerKey(keyOf, project)`: process a stream of messages, each under the lock of its key,
 * different keys in parallel and one key at a time — across instances through the lock, and in
 * arrival order within this instance through a local queue per key.
 */
import { Observable, Subscriber, Subscription, type ObservableInput, type OperatorFunction } from 'rxjs';
import type { Lease } from '../engine/lease/Lease.js';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';
import type { AcquireOptions } from '../options/LockerOptions.js';
import { ACQUIRE_KEYS } from '../options/validate.js';
import { defaultLockerForOperators } from './defaultLocker.js';
import { splitLocker } from './lockerChoice.js';

/**
 * Options of {@link exclusivePerKey}: an acquisition's options, the locker, and the concurrency.
 *
 * @example
 * ```ts
 * const options: ExclusivePerKeyOptions = { locker, concurrency: 8, ttl: 10_000 };
 * orders$.pipe(exclusivePerKey((o) => `customer:${o.customerId}`, (o, lease) => applyOrder(o, lease.fence), options)).subscribe();
 * ```
 */
export interface ExclusivePerKeyOptions extends AcquireOptions {
  /**
   * Most messages processed at the same time by this subscription, over all keys (an integer of
   * at least 1, or `Infinity`). Messages of one key never run at the same time whatever it says.
   * @default Infinity
   * @example
   * ```ts
   * // at most 16 accounts at once; each account's messages one at a time, in arrival order
   * payments$.pipe(exclusivePerKey((p) => `account:${p.accountId}`, applyPayment, { concurrency: 16, locker }));
   * ```
   */
  concurrency?: number;
  /**
   * The locker to take the locks with.
   * @default the process-wide default locker (see `setDefaultLocker`), in memory unless replaced
   */
  locker?: Locker;
}

const KEYS = [...ACQUIRE_KEYS, 'locker', 'concurrency'];

/**
 * Processes each message of the source with `project(message, lease, signal)` while holding the
 * lock on `keyOf(message)`, and emits what the projections emit. Messages of different keys run
 * in parallel, up to `concurrency` at once; messages of one key run one at a time — in this
 * process because they wait in a local queue per key, and across processes because each holds
 * the key's lock while it runs.
 *
 * <span class="informal">`mergeMap` where each key is a critical section.</span>
 *
 * **Order.** Within one subscription, the messages of one key are processed in the order they
 * arrived (a message starts only after the previous one of its key has ended and its lock was
 * given back), and the values of one key come out in that order. Nothing is guaranteed about
 * order across keys, nor across instances: two instances that each receive a message for the same
 * key take the lock in whatever order they reach the store, so when order across instances
 * matters, route each key to one consumer (partitioning) and use the lock for exclusion only.
 *
 * **Errors.** As in `mergeMap`: an error of one message's processing (including
 * `LockTimeoutError`, `LockStoreError`, `LockLostError`, or a throw in `keyOf`/`project`) errors
 * the result; the processing of every other message is unsubscribed and its lock given back, and
 * queued messages are dropped. To go on after a failed message, catch inside `project`. Messages
 * wait in memory while their key or all `concurrency` slots are busy (no back-pressure, as in
 * `mergeMap`). Completes once the source completed and every message was processed.
 *
 * Throws `LockOptionsError` at once for an invalid option; a key that `keyOf` returns is checked
 * when its message is processed (the result errors with `LockOptionsError`).
 *
 * @example
 * ```ts
 * import { from } from 'rxjs';
 * import { createLocker, exclusivePerKey } from 'rxjs-lock';
 *
 * const locker = createLocker(); // use a RedisLockStore to exclude across processes
 * const balances = new Map<string, number>();
 * from([{ account: 'a', amount: 5 }, { account: 'b', amount: 1 }, { account: 'a', amount: -2 }])
 *   .pipe(
 *     exclusivePerKey(
 *       (e) => `account:${e.account}`,
 *       async (e) => {
 *         balances.set(e.account, (balances.get(e.account) ?? 0) + e.amount);
 *         return `${e.account}=${balances.get(e.account)}`;
 *       },
 *       { concurrency: 8, locker },
 *     ),
 *   )
 *   .subscribe({ next: console.log, complete: () => void locker.close() });
 * // Logs (a's two lines always in this order; b's anywhere):
 * // a=5
 * // b=1
 * // a=3
 * ```
 *
 * @param keyOf The key of a message's lock (a non-empty string of at most 4096 characters).
 * @param project Called with the message, the lease and an `AbortSignal` (see `Locker.using`)
 * once the lock is held; returns the message's work.
 * @param options `concurrency` (default `Infinity`), `locker` (default: the default locker) and
 * `ttl`, `waitTimeout`, `retry`, `renew`, `onLost` for each acquisition.
 * @return A function that returns an Observable of the projections' values.
 * @see Locker.using
 */
export function exclusivePerKey<T, R>(
  keyOf: (message: T) => string,
  project: (message: T, lease: Lease, signal: AbortSignal) => ObservableInput<R>,
  options?: ExclusivePerKeyOptions,
): OperatorFunction<T, R> {
  if (typeof keyOf !== 'function') throw new LockOptionsError('keyOf', 'a function (message) => key', keyOf);
  if (typeof project !== 'function') throw new LockOptionsError('project', 'a function (message, lease, signal) => ObservableInput', project);
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new LockOptionsError('options', 'an object of exclusivePerKey options', options);
  }
  const { concurrency: given, ...rest } = options ?? {};
  const concurrency = checkConcurrency(given);
  const { locker: chosen, acquireOptions } = splitLocker(options === undefined ? undefined : rest, KEYS);

  return (source) =>
    new Observable<R>((subscriber) => {
      const locker = chosen ?? defaultLockerForOperators();
      /** Messages not started yet, per key; a key is here while it runs or waits for a slot. */
      const queues = new Map<string, T[]>();
      /** Keys with a message waiting for a slot and none running, in the order they got in line. */
      const ready: string[] = [];
      let running = 0;
      let sourceDone = false;

      const startWhatFits = (): void => {
        while (running < concurrency && ready.length > 0 && !subscriber.closed) {
          const key = ready.shift()!;
          run(key, queues.get(key)!.shift()!);
        }
        if (sourceDone && running === 0 && ready.length === 0) subscriber.complete();
      };

      const run = (key: string, message: T): void => {
        running++;
        let work$: Observable<R>;
        try {
          work$ = locker.using(key, (lease, signal) => project(message, lease, signal), acquireOptions);
        } catch (error) {
          subscriber.error(error); // an invalid key: LockOptionsError
          return;
        }
        const slot = new Subscription();
        subscriber.add(slot);
        slot.add(
          work$.subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => subscriber.error(error),
            complete: () => {
              subscriber.remove(slot);
              running--;
              if (queues.get(key)!.length > 0) ready.push(key);
              else queues.delete(key);
              startWhatFits();
            },
          }),
        );
      };

      const guarded = (fn: () => void) => {
        try {
          fn();
        } catch (error) {
          subscriber.error(error); // a throw in keyOf
        }
      };

      // The source's subscriber is tied to the result before the source runs, so an error raised
      // while a synchronous source emits (a throw in keyOf, an invalid key) closes it at once, as
      // in mergeMap: no keyOf call after the error, and an endless synchronous source stops.
      const fromSource = new Subscriber<T>({
        next: (message) =>
          guarded(() => {
            const key = keyOf(message);
            const queue = queues.get(key);
            if (queue !== undefined) {
              queue.push(message); // its key runs or waits for a slot: it goes after those
              return;
            }
            queues.set(key, [message]);
            ready.push(key);
            startWhatFits();
          }),
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          sourceDone = true;
          guarded(startWhatFits);
        },
      });
      subscriber.add(fromSource);
      source.subscribe(fromSource);
    });
}

function checkConcurrency(value: unknown): number {
  if (value === undefined) return Infinity;
  if (value === Infinity || (typeof value === 'number' && Number.isInteger(value) && value >= 1)) return value;
  throw new LockOptionsError('concurrency', 'an integer of at least 1, or Infinity', value);
}
