/**
 * `withLock(key)` as a free operator, for code that does not pass a locker around.
 */
import { defer, type MonoTypeOperatorFunction } from 'rxjs';
import { defaultLockerForOperators } from './defaultLocker.js';
import { chooseLocker, type WithLockOptions } from './lockerChoice.js';

export type { WithLockOptions };

/**
 * Runs the source while holding the lock on `key`: subscribes to it only once the lock is held,
 * and releases the lock exactly once when the result completes, errors or is unsubscribed.
 *
 * <span class="informal">`finalize` for a distributed lock: acquire on subscribe, release on any end.</span>
 *
 * Uses `options.locker`, or else the process-wide default locker, resolved at subscription: so
 * `source$.pipe(withLock('k'))` works with no set-up at all, within one process. Acquisition
 * errors (`LockTimeoutError`, `LockStoreError`) become the result's errors. Complete and error
 * reach the subscriber only after the release has been answered; on unsubscribe the release
 * finishes in the background. With `onBusy: 'skip'` it tries once and, when the lock is held
 * elsewhere, completes empty without subscribing to the source (store failures still error).
 * Without a `locker` and before any `setDefaultLocker()`, the first use warns once
 * (`process.emitWarning`, code `RXJS_LOCK_IN_MEMORY_DEFAULT`): the built-in locker excludes only
 * within this process. Throws `LockOptionsError` at once for an invalid key or option.
 *
 * @example
 * ```ts
 * import { of, delay } from 'rxjs';
 * import { withLock } from 'rxjs-lock';
 *
 * of('written').pipe(delay(10), withLock('file:report.csv')).subscribe(console.log);
 * // Logs (after the lock is taken and 10 ms have passed):
 * // written
 * ```
 *
 * @param key The resource to lock (a non-empty string of at most 4096 characters).
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy` (default `'wait'`) for this acquisition, and `locker` (default: the default locker).
 * @return A function that returns an Observable mirroring the source while the lock is held.
 * @see Locker.withLock
 */
export function withLock<T>(key: string, options?: WithLockOptions): MonoTypeOperatorFunction<T> {
  const { locker, acquireOptions } = chooseLocker(key, options);
  if (locker !== undefined) return locker.withLock<T>(key, acquireOptions);
  return (source) => defer(() => source.pipe(defaultLockerForOperators().withLock<T>(key, acquireOptions)));
}
