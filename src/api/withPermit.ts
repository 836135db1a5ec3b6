/**
 * `withPermit(key, { limit })` as a free operator: a counting semaphore for code that does not pass
 * a locker around.
 */
import { defer, type MonoTypeOperatorFunction } from 'rxjs';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';
import type { PermitOptions } from '../options/PermitOptions.js';
import { validateKey } from '../options/validate.js';
import { checkPermitOptions } from '../options/validatePermits.js';
import { defaultLockerForOperators } from './defaultLocker.js';

/**
 * Options of the free {@link withPermit}: the permit options plus the locker to use.
 *
 * @example
 * ```ts
 * import { withPermit, type WithPermitOptions } from 'rxjs-lock';
 *
 * const options: WithPermitOptions = { limit: 3, locker, waitTimeout: 30_000 }; // at most 3 renders at once
 * render(job).pipe(withPermit('renderer', options)).subscribe();
 * ```
 */
export interface WithPermitOptions extends PermitOptions {
  /**
   * The locker to take the permits with.
   * @default the process-wide default locker (see `setDefaultLocker`), in memory unless replaced
   */
  locker?: Locker;
}

/**
 * Runs the source while holding `permits` (default 1) of the `limit` permits of `key`: at most
 * `limit` permits are held at once, across processes on a shared store. Subscribes to the source
 * once the permits are held, and gives them back exactly once when the result completes, errors or
 * is unsubscribed.
 *
 * <span class="informal">`withLock` for up to `limit` holders at once.</span>
 *
 * Uses `options.locker`, or else the process-wide default locker, resolved at subscription (which
 * warns once, as `withLock` does, while it is the built-in in-memory one). Waiters are served first
 * come, first served; see `Locker.withPermit`. Throws `LockOptionsError` at once for an invalid key
 * or option.
 *
 * @example
 * ```ts
 * import { from, mergeMap } from 'rxjs';
 * import { withPermit } from 'rxjs-lock';
 *
 * from(urls).pipe(
 *   mergeMap((url) => fetchPage(url).pipe(withPermit('crawler', { limit: 4, locker }))), // 4 fetches at most
 * ).subscribe();
 * ```
 *
 * @param key The semaphore's name (a non-empty string of at most 4096 characters).
 * @param options `limit` (required), `permits` (default 1), `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, and `locker`.
 * @return A function that returns an Observable mirroring the source while the permits are held.
 * @see Locker.withPermit
 */
export function withPermit<T>(key: string, options: WithPermitOptions): MonoTypeOperatorFunction<T> {
  validateKey(key);
  checkPermitOptions(options);
  const { locker, ...permitOptions } = options;
  if (locker !== undefined && (typeof locker !== 'object' || locker === null || typeof locker.withPermit !== 'function')) {
    throw new LockOptionsError('locker', 'a Locker made by createLocker()', locker);
  }
  if (locker !== undefined) return locker.withPermit<T>(key, permitOptions);
  return (source) => defer(() => source.pipe(defaultLockerForOperators().withPermit<T>(key, permitOptions)));
}
