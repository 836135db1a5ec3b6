/**
 * `withReadLock(key)` and `withWriteLock(key)` as free operators: a read-write lock for code that
 * does not pass a locker around.
 */
import { defer, type MonoTypeOperatorFunction } from 'rxjs';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';
import type { ReadWriteLockOptions } from '../options/PermitOptions.js';
import { checkOperatorOptions, validateKey } from '../options/validate.js';
import { defaultLockerForOperators } from './defaultLocker.js';

/**
 * Options of the free {@link withReadLock} and {@link withWriteLock}: plus the locker to use.
 *
 * @example
 * ```ts
 * import { withWriteLock, type WithReadWriteLockOptions } from 'rxjs-lock';
 *
 * const options: WithReadWriteLockOptions = { locker, ttl: 10_000, waitTimeout: 5_000 };
 * saveCatalog(catalog).pipe(withWriteLock('catalog', options)).subscribe();
 * ```
 */
export interface WithReadWriteLockOptions extends ReadWriteLockOptions {
  /**
   * The locker to take the lock with.
   * @default the process-wide default locker (see `setDefaultLocker`), in memory unless replaced
   */
  locker?: Locker;
}

/**
 * Runs the source under a read lock on `key`: readers share it, writers ({@link withWriteLock})
 * exclude them. Readers that come after a waiting writer queue behind it.
 *
 * <span class="informal">`withLock` that readers share.</span>
 *
 * @example
 * ```ts
 * import { withReadLock } from 'rxjs-lock';
 * loadCatalog().pipe(withReadLock('catalog', { locker })).subscribe(render);
 * ```
 *
 * @param key The lock's name (a non-empty string of at most 4096 characters).
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, `reentrant`, and `locker` (default: the default locker).
 * @return A function that returns an Observable mirroring the source while the read lock is held.
 * @see Locker.withReadLock
 */
export function withReadLock<T>(key: string, options?: WithReadWriteLockOptions): MonoTypeOperatorFunction<T> {
  const { locker, lockOptions } = split(key, options);
  if (locker !== undefined) return locker.withReadLock<T>(key, lockOptions);
  return (source) => defer(() => source.pipe(defaultLockerForOperators().withReadLock<T>(key, lockOptions)));
}

/**
 * Runs the source under a write lock on `key`: exclusive of every reader and writer.
 *
 * <span class="informal">`withLock` that excludes readers too.</span>
 *
 * @example
 * ```ts
 * import { withWriteLock } from 'rxjs-lock';
 * rebuildCatalog().pipe(withWriteLock('catalog', { locker })).subscribe();
 * ```
 *
 * @param key The lock's name (a non-empty string of at most 4096 characters).
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, `reentrant`, and `locker` (default: the default locker).
 * @return A function that returns an Observable mirroring the source while the write lock is held.
 * @see Locker.withWriteLock
 */
export function withWriteLock<T>(key: string, options?: WithReadWriteLockOptions): MonoTypeOperatorFunction<T> {
  const { locker, lockOptions } = split(key, options);
  if (locker !== undefined) return locker.withWriteLock<T>(key, lockOptions);
  return (source) => defer(() => source.pipe(defaultLockerForOperators().withWriteLock<T>(key, lockOptions)));
}

function split(key: string, options: WithReadWriteLockOptions | undefined): { locker: Locker | undefined; lockOptions: ReadWriteLockOptions | undefined } {
  validateKey(key);
  if (options === undefined) return { locker: undefined, lockOptions: undefined };
  if (typeof options !== 'object' || options === null) throw new LockOptionsError('options', 'an object of read-write lock options', options);
  const { locker, ...lockOptions } = options;
  checkOperatorOptions(lockOptions);
  if (locker !== undefined && (typeof locker !== 'object' || locker === null || typeof locker.withReadLock !== 'function')) {
    throw new LockOptionsError('locker', 'a Locker made by createLocker()', locker);
  }
  return { locker, lockOptions };
}
