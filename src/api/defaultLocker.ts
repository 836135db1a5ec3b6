/**
 * The process-wide locker used by the free `withLock()` when no `locker` option is given: an
 * in-memory one, created on first use, until `setDefaultLocker()` replaces it.
 */
import { createLocker } from './createLocker.js';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';

let current: Locker | undefined;

/** The locker the free `withLock()` uses: the one set by {@link setDefaultLocker}, else an in-memory one. */
export function getDefaultLocker(): Locker {
  return (current ??= createLocker());
}

/**
 * Makes `locker` the one the free `withLock()` uses from now on (including for operators created
 * earlier and subscribed later). Pass `undefined` to go back to a fresh in-memory locker.
 *
 * @example
 * ```ts
 * setDefaultLocker(createLocker({ store: new RedisLockStore(redis) }));
 * jobs$.pipe(mergeMap((job) => run(job).pipe(withLock(`job:${job.id}`)))).subscribe();
 * ```
 */
export function setDefaultLocker(locker: Locker | undefined): void {
  if (locker !== undefined && (typeof locker !== 'object' || locker === null || typeof locker.withLock !== 'function' || typeof locker.acquire !== 'function')) {
    throw new LockOptionsError('locker', 'a Locker made by createLocker(), or undefined', locker);
  }
  current = locker;
}
