/**
 * The composition root: validates the options and picks the default store, so the engine and
 * the options layer never depend on a backend.
 */
import { MemoryLockStore } from '../backends/memory/MemoryLockStore.js';
import type { LockerOptions } from '../options/LockerOptions.js';
import { resolveLockerOptions } from '../options/validate.js';
import { LockEngine } from './LockEngine.js';
import type { Locker } from './Locker.js';

/**
 * Creates a {@link Locker}: takes and gives back locks on `options.store` (in memory by default).
 * Throws `LockOptionsError` at once for an invalid or unknown option.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLocker } from 'rxjs-lock';
 * import { RedisLockStore } from 'rxjs-lock/redis';
 *
 * const locker = createLocker({
 *   store: new RedisLockStore(new Redis()),
 *   ttl: 15_000,          // lease length, ms
 *   waitTimeout: 5_000,   // give up after waiting this long, ms
 * });
 * ```
 */
export function createLocker(options?: LockerOptions): Locker {
  return new LockEngine(resolveLockerOptions(options, () => new MemoryLockStore()));
}
