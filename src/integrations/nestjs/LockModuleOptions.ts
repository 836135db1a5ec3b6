/**
 * The options of `LockModule.forRoot()` / `forRootAsync()`: where the locks live (a store you
 * made, or Redis connection options the module connects with), the locker's options, and how lock
 * failures are answered.
 */
import type { RedisOptions } from 'ioredis';
import type { RedisLockStoreOptions } from '../../backends/redis/RedisLockStore.js';
import type { RedisClient } from '../../backends/redis/RedisClient.js';
import type { LockerOptions } from '../../options/LockerOptions.js';
import type { LockStore } from '../../store/LockStore.js';
import type { LockErrorOptions } from './lockErrorResponses.js';

/**
 * Options of `LockModule`. Give exactly one of `store`, `client` or `redis`:
 * - `store`: any `LockStore` you made (yours to close, after the application);
 * - `client`: an ioredis client you made (yours to close); the module makes the `RedisLockStore`
 *   on it and closes that store's own subscriber connection on shutdown;
 * - `redis`: ioredis connection options or a `redis://` URL; the module connects, and on
 *   application shutdown closes the locker, the store and the connections it made.
 *
 * @example
 * ```ts
 * LockModule.forRoot({
 *   redis: { host: 'localhost', port: 6379 },
 *   locker: { ttl: 15_000, waitTimeout: 5_000 },
 *   errors: { busyStatus: 409 },
 *   isGlobal: true,
 * });
 * ```
 */
export interface LockModuleOptions {
  /**
   * A lock store of yours (`new RedisLockStore(redis)`, `new MemoryLockStore()`…). The module
   * never closes it.
   * @example `{ store: new RedisLockStore(redis) }`
   */
  store?: LockStore;
  /**
   * An ioredis client (`Redis` or `Cluster`) of yours; the module never closes it.
   * @example `{ client: new Redis(process.env.REDIS_URL) }`
   */
  client?: RedisClient;
  /**
   * ioredis connection options, or a `redis://` URL: the module creates the client (and so needs
   * `ioredis` installed) and closes it on application shutdown.
   * @example `{ redis: { host: 'redis', port: 6379, password: process.env.REDIS_PASSWORD } }`
   */
  redis?: string | RedisOptions;
  /**
   * Options of the `RedisLockStore` the module makes (with `client` or `redis`).
   * @default {}
   */
  redisStore?: RedisLockStoreOptions;
  /**
   * Options of the locker (`createLocker`), but for `store`: `ttl`, `waitTimeout`, `retry`,
   * `keyPrefix`, `commandTimeout`…
   * @default {} (the defaults of createLocker)
   */
  locker?: Omit<LockerOptions, 'store'>;
  /**
   * How lock failures are answered, for every `@WithLock` (each may override it).
   * @default { busyStatus: 409, retryAfter: 1 }
   */
  errors?: LockErrorOptions;
}

/**
 * Extras of `forRoot` / `forRootAsync` that shape the module rather than the locker.
 *
 * @example
 * ```ts
 * LockModule.forRoot({ store, isGlobal: true });
 * ```
 */
export interface LockModuleExtras {
  /**
   * Register the module globally: `@WithLock` and `@InjectLocker()` work in every module without
   * importing `LockModule` there.
   * @default false
   */
  isGlobal?: boolean;
}
