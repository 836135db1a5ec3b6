/**
 * The composition root: validates the options and picks the default store, so the engine and
 * the options layer never depend on a backend.
 */
import { MemoryLockStore } from '../backends/memory/MemoryLockStore.js';
import { LockEngine } from '../engine/LockEngine.js';
import type { Locker } from '../engine/Locker.js';
import type { LockerOptions } from '../options/LockerOptions.js';
import { resolveLockerOptions } from '../options/validate.js';

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
 * const redis = new Redis();
 * const store = new RedisLockStore(redis);
 * const locker = createLocker({
 *   store,
 *   ttl: 15_000,          // lease length, ms
 *   waitTimeout: 5_000,   // give up after waiting this long, ms
 * });
 * // …
 * await locker.close();   // then store.close() and redis.quit(): those are yours
 * ```
 */
export function createLocker(options?: LockerOptions): Locker {
  let made = false;
  const settings = resolveLockerOptions(options, () => {
    made = true;
    return new MemoryLockStore();
  });
  return new LockEngine(settings, { ownsStore: made });
}
