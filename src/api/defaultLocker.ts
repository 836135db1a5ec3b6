/**
 * The process-wide locker used by the free `withLock()` when no `locker` option is given: an
 * in-memory one, created on first use, until `setDefaultLocker()` replaces it. Because that
 * default excludes only within one process, the free operators warn once when they run on it and
 * nobody chose it (see {@link IN_MEMORY_DEFAULT_WARNING}).
 */
import { createLocker } from './createLocker.js';
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';

let current: Locker | undefined;
/** `setDefaultLocker()` was called: the default is the user's choice, even an in-memory one. */
let chosen = false;
let warned = false;

/**
 * The `code` of the warning (`process.emitWarning`) that the free `withLock`/`usingLock` emit
 * once per process when they run on the built-in in-memory default locker and
 * `setDefaultLocker()` was never called: such locks do not exclude across processes.
 *
 * @example
 * ```ts
 * process.on('warning', (w) => {
 *   if ((w as NodeJS.ErrnoException).code === IN_MEMORY_DEFAULT_WARNING) log.error(w.message);
 * });
 * ```
 */
export const IN_MEMORY_DEFAULT_WARNING = 'RXJS_LOCK_IN_MEMORY_DEFAULT';

/**
 * The locker the free `withLock()` uses: the one set by {@link setDefaultLocker}, else an in-memory one.
 *
 * @example
 * ```ts
 * getDefaultLocker().events$.subscribe((e) => console.log(e.type, e.key)); // what the free operators do
 * ```
 */
export function getDefaultLocker(): Locker {
  return (current ??= createLocker());
}

/** {@link getDefaultLocker}, for the free operators: warns once if nobody chose the default. */
export function defaultLockerForOperators(): Locker {
  if (!chosen && !warned) {
    warned = true;
    warnInMemoryDefault();
  }
  return getDefaultLocker();
}

function warnInMemoryDefault(): void {
  if (typeof process === 'undefined' || typeof process.emitWarning !== 'function') return;
  process.emitWarning(
    'withLock()/usingLock() without a `locker` run on the built-in in-memory locker: it excludes only within this process, ' +
      'not across processes or instances of your service. To lock across processes, call once at start-up ' +
      "setDefaultLocker(createLocker({ store: new RedisLockStore(redis) })) (RedisLockStore from 'rxjs-lock/redis'), " +
      'or pass { locker }. To keep the in-memory locker on purpose (one process), call setDefaultLocker(createLocker()).',
    { type: 'RxjsLockWarning', code: IN_MEMORY_DEFAULT_WARNING },
  );
}

/**
 * Makes `locker` the one the free `withLock()` uses from now on (including for operators created
 * earlier and subscribed later). Pass `undefined` to go back to a fresh in-memory locker. Calling
 * it at all (even with an in-memory locker, or `undefined`) counts as choosing the default, so
 * the free operators no longer warn about the in-memory default.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLocker, setDefaultLocker, withLock } from 'rxjs-lock';
 * import { RedisLockStore } from 'rxjs-lock/redis';
 *
 * const redis = new Redis();
 * setDefaultLocker(createLocker({ store: new RedisLockStore(redis) }));
 * jobs$.pipe(mergeMap((job) => run(job).pipe(withLock(`job:${job.id}`)))).subscribe();
 * ```
 */
export function setDefaultLocker(locker: Locker | undefined): void {
  if (
    locker !== undefined &&
    (typeof locker !== 'object' || locker === null || typeof locker.withLock !== 'function' || typeof locker.acquire !== 'function')
  ) {
    throw new LockOptionsError('locker', 'a Locker made by createLocker(), or undefined', locker);
  }
  current = locker;
  chosen = true;
}
