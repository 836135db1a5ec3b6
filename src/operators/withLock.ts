/**
 * `withLock(key)` as a free operator, for code that does not pass a locker around.
 */
import { defer, type MonoTypeOperatorFunction } from 'rxjs';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors.js';
import type { AcquireOptions } from '../options/LockerOptions.js';
import { ACQUIRE_KEYS, checkAcquireOptions, validateKey } from '../options/validate.js';
import { getDefaultLocker } from './defaultLocker.js';

/** Options of the free {@link withLock}: an acquisition's options plus the locker to use. */
export interface WithLockOptions extends AcquireOptions {
  /**
   * The locker to take the lock with.
   * @default the process-wide default locker (see `setDefaultLocker`), in memory unless replaced
   */
  locker?: Locker;
}

const WITH_LOCK_KEYS = [...ACQUIRE_KEYS, 'locker'];

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
 * finishes in the background. Throws `LockOptionsError` at once for an invalid key or option.
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
 * @param options `ttl`, `waitTimeout`, `retry` for this acquisition, and `locker`.
 * @return A function that returns an Observable mirroring the source while the lock is held.
 * @see Locker.withLock
 */
export function withLock<T>(key: string, options?: WithLockOptions): MonoTypeOperatorFunction<T> {
  validateKey(key);
  let acquireOptions: AcquireOptions | undefined = options;
  let locker: Locker | undefined;
  if (options !== undefined) {
    checkAcquireOptions(options, WITH_LOCK_KEYS);
    const { locker: chosen, ...rest } = options;
    if (chosen !== undefined && (typeof chosen !== 'object' || chosen === null || typeof chosen.withLock !== 'function')) {
      throw new LockOptionsError('locker', 'a Locker made by createLocker()', chosen);
    }
    locker = chosen;
    acquireOptions = rest;
  }
  if (locker !== undefined) return locker.withLock<T>(key, acquireOptions);
  return (source) => defer(() => source.pipe(getDefaultLocker().withLock<T>(key, acquireOptions)));
}
