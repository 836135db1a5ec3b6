/**
 * `usingLock(key, (lease) => work)`: the `withLock` variant that hands the lease to the work,
 * for work that needs the fencing token or its own view of the lease.
 */
import { defer, type Observable } from 'rxjs';
import type { LockedWork } from '../engine/acquisition/workSignal.js';
import { LockOptionsError } from '../errors/errors.js';
import { defaultLockerForOperators } from './defaultLocker.js';
import { chooseLocker, type WithLockOptions } from './lockerChoice.js';

/**
 * Runs `work(lease, signal)` while holding the lock on `key`, and releases the lock exactly once
 * when the Observable (or Promise) it returns completes, errors or is unsubscribed (a synchronous
 * throw in `work` releases too). The lease gives the work its fencing token (`lease.fence`) to
 * pass to the protected resource, its deadline (`lease.validUntil`, `lease.held`) and
 * `lease.lost$`. `signal` aborts when the lease is lost (reason: the `LockLostError`) or the
 * work's subscription ends otherwise (the subscriber left; reason: an `'AbortError'`
 * `DOMException`): pass it to Promise-based work so it stops too.
 *
 * <span class="informal">`withLock` with the lease in hand.</span>
 *
 * Uses `options.locker`, or else the process-wide default locker (see `setDefaultLocker`),
 * resolved at subscription. Like `withLock`: acquisition errors are the result's errors; a lost
 * lease unsubscribes the work and errors with `LockLostError` (unless `onLost: 'notify'`);
 * complete and error are delivered once the release has been answered; `onBusy: 'skip'` completes
 * empty without running the work when the lock is held elsewhere. Without a `locker` and before
 * any `setDefaultLocker()`, the first use warns once (`RXJS_LOCK_IN_MEMORY_DEFAULT`): the built-in
 * locker excludes only within this process. Throws `LockOptionsError` at once for an invalid key
 * or option.
 *
 * @example
 * ```ts
 * import { usingLock } from 'rxjs-lock';
 * import { FencedResource } from 'rxjs-lock/redis';
 *
 * const ledger = new FencedResource(redis, 'ledger:7');
 * usingLock('ledger:7', (lease) => ledger.write(lease.fence, JSON.stringify(entry)), { locker })
 *   .subscribe((result) => console.log(result.accepted ? 'written' : 'refused: a newer holder wrote'));
 * ```
 *
 * @param key The resource to lock (a non-empty string of at most 4096 characters).
 * @param work Called with the lease and an `AbortSignal` once the lock is held; returns the work to run.
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy` (default `'wait'`) for this acquisition, and `locker` (default: the default locker).
 * @return An Observable of the work's values, produced while the lock is held.
 * @see Locker.using
 */
export function usingLock<R>(key: string, work: LockedWork<R>, options?: WithLockOptions): Observable<R> {
  const { locker, acquireOptions } = chooseLocker(key, options);
  if (typeof work !== 'function') throw new LockOptionsError('work', 'a function (lease, signal) => ObservableInput', work);
  if (locker !== undefined) return locker.using(key, work, acquireOptions);
  return defer(() => defaultLockerForOperators().using(key, work, acquireOptions));
}
