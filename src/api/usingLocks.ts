/**
 * `usingLocks(keys, (locks) => work)`: the `withLocks` variant that hands the set of leases to the
 * work, for work that needs each key's fencing token.
 */
import { defer, type Observable } from 'rxjs';
import type { LockedSetWork } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';
import { defaultLockerForOperators } from './defaultLocker.js';
import { chooseLockerForKeys, type WithLockOptions } from './lockerChoice.js';

/**
 * Runs `work(locks, signal)` while holding the locks on every key of `keys`, and gives them all
 * back exactly once when the Observable (or Promise) it returns ends in any way (a synchronous
 * throw in `work` too). `locks.fences.get(key)` is each key's fencing token; `signal` aborts when
 * a lease of the set is lost (reason: its `LockLostError`) or the work's subscription ends
 * otherwise. Keys are taken as `withLocks` takes them: all or none, each once, in one global
 * order, one `waitTimeout` for the set.
 *
 * <span class="informal">`withLocks` with the leases in hand.</span>
 *
 * @example
 * ```ts
 * import { usingLocks } from 'rxjs-lock';
 *
 * usingLocks(['account:1', 'account:2'], async (locks, signal) => {
 *   await ledger.transfer('account:1', 'account:2', 100, { fences: locks.fences, signal });
 * }, { locker }).subscribe({ error: (e) => console.error('transfer not done:', e) });
 * ```
 *
 * @param keys The resources to lock: 1 to 64 keys (each a non-empty string of at most 4096 characters); duplicates count once.
 * @param work Called with the set of leases and an `AbortSignal` once every lock is held; returns the work to run.
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, `reentrant` for every key of the set, and `locker` (default: the default locker).
 * @return An Observable of the work's values, produced while every lock is held.
 * @see Locker.usingLocks
 */
export function usingLocks<R>(keys: readonly string[], work: LockedSetWork<R>, options?: WithLockOptions): Observable<R> {
  const { locker, acquireOptions } = chooseLockerForKeys(keys, options);
  if (typeof work !== 'function') throw new LockOptionsError('work', 'a function (locks, signal) => ObservableInput', work);
  if (locker !== undefined) return locker.usingLocks(keys, work, acquireOptions);
  return defer(() => defaultLockerForOperators().usingLocks(keys, work, acquireOptions));
}
