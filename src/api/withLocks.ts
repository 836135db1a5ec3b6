/**
 * `withLocks(keys)` as a free operator: `withLock` for several keys at once, for code that does
 * not pass a locker around.
 */
import { defer, type MonoTypeOperatorFunction } from 'rxjs';
import { defaultLockerForOperators } from './defaultLocker.js';
import { chooseLockerForKeys, type WithLockOptions } from './lockerChoice.js';

/**
 * Runs the source while holding the locks on every key of `keys`: subscribes to it only once all
 * are held, and gives them all back exactly once when the result completes, errors or is
 * unsubscribed. All or none: if the wait ends before the last key is held (`LockTimeoutError`,
 * `LockStoreError`, `LockLostError` of a key already taken, or an unsubscribe), the keys taken so
 * far are given back and the source is never subscribed.
 *
 * <span class="informal">`withLock` for a set of resources, without deadlocks between overlapping sets.</span>
 *
 * Each distinct key is taken once, one after the other, in one global order (the keys as the
 * store sees them, sorted by UTF-16 code unit), so callers with overlapping sets cannot deadlock;
 * one `waitTimeout` covers the set. At most 64 distinct keys. Uses `options.locker`, or else the
 * process-wide default locker, resolved at subscription (the first use of the built-in in-memory
 * default warns once, as `withLock` does). Throws `LockOptionsError` at once for an empty or too
 * long array (`keys`), an invalid key (`keys[i]`) or option. See `Locker.withLocks`.
 *
 * @example
 * ```ts
 * import { of, delay } from 'rxjs';
 * import { withLocks } from 'rxjs-lock';
 *
 * of('moved').pipe(delay(10), withLocks(['shelf:b', 'shelf:a'])).subscribe(console.log);
 * // Logs (once shelf:a, then shelf:b, are held and 10 ms have passed):
 * // moved
 * ```
 *
 * @param keys The resources to lock: 1 to 64 keys (each a non-empty string of at most 4096 characters); duplicates count once.
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, `reentrant` for every key of the set, and `locker` (default: the default locker).
 * @return A function that returns an Observable mirroring the source while every lock is held.
 * @see Locker.withLocks
 */
export function withLocks<T>(keys: readonly string[], options?: WithLockOptions): MonoTypeOperatorFunction<T> {
  const { locker, acquireOptions } = chooseLockerForKeys(keys, options);
  if (locker !== undefined) return locker.withLocks<T>(keys, acquireOptions);
  return (source) => defer(() => source.pipe(defaultLockerForOperators().withLocks<T>(keys, acquireOptions)));
}
