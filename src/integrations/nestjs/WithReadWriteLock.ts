/** `@WithReadLock(key)` / `@WithWriteLock(key)`: runs a handler (or every handler of a class) under a read or write lock. */
import type { AcquireReadWriteOptions } from '../../options/PermitOptions.js';
import { ACQUIRE_KEYS } from '../../options/validate.js';
import { lockDecorator, type HandlerLockOptions } from './lockDecorator.js';
import { compileLockKey, type LockKey } from './lockKey.js';

/**
 * Options of one `@WithReadLock` or `@WithWriteLock`: the acquisition's options (`ttl`,
 * `waitTimeout`, `retry`, `renew`, `onLost`, `reentrant`; the module's `locker` options by default), how
 * failures are answered and what a client disconnect does.
 *
 * @example
 * ```ts
 * @WithWriteLock('config:{params.app}', { waitTimeout: 2_000, errors: { busyStatus: 423 } })
 * ```
 */
export interface WithReadWriteLockOptions extends AcquireReadWriteOptions, HandlerLockOptions {}

/**
 * Runs the handler under a read lock on `key`: requests whose key resolves the same read at once,
 * across every instance sharing the store, and none of them runs while a `@WithWriteLock` handler
 * holds the key (`locker.withReadLock`). Once a writer waits, readers that come later queue behind
 * it, so writers are not starved. Held, renewed, given back and answered on failure as
 * `@WithLock` is. Needs `LockModule` and a store with shared locks (not a quorum store). The
 * read-write lock `key` is apart from the mutex `key` of `@WithLock`.
 *
 * @param key A template such as `'config:{params.app}'`, or a function (see {@link LockKey}).
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `reentrant` (a read or write
 * lock the handler's service takes on the same key joins the handler's, see
 * `ReadWriteLockOptions`), `errors`, `onDisconnect`; checked when the class is defined
 * (`LockOptionsError`).
 *
 * @example
 * ```ts
 * @Controller('config')
 * export class ConfigController {
 *   @Get(':app')
 *   @WithReadLock('config:{params.app}')
 *   read(@Param('app') app: string): Promise<Config> {
 *     return this.configs.read(app);
 *   }
 *
 *   @Put(':app')
 *   @WithWriteLock('config:{params.app}')
 *   write(@Param('app') app: string, @Body() config: Config): Promise<void> {
 *     return this.configs.write(app, config);
 *   }
 * }
 * ```
 */
export function WithReadLock(key: LockKey, options: WithReadWriteLockOptions = {}): ClassDecorator & MethodDecorator {
  return lockDecorator('WithReadLock', { kind: 'read', key: compileLockKey(key) }, options, ACQUIRE_KEYS);
}

/**
 * Runs the handler under the write lock on `key`: exclusive of every reader (`@WithReadLock`) and
 * writer of that key, across every instance sharing the store (`locker.withWriteLock`). Otherwise
 * as {@link WithReadLock}.
 *
 * @param key A template such as `'config:{params.app}'`, or a function (see {@link LockKey}).
 * @param options As {@link WithReadLock}'s.
 *
 * @example
 * ```ts
 * @Put(':app')
 * @WithWriteLock('config:{params.app}', { waitTimeout: 5_000 })
 * write(@Param('app') app: string, @Body() config: Config): Promise<void> {
 *   return this.configs.write(app, config);
 * }
 * ```
 */
export function WithWriteLock(key: LockKey, options: WithReadWriteLockOptions = {}): ClassDecorator & MethodDecorator {
  return lockDecorator('WithWriteLock', { kind: 'write', key: compileLockKey(key) }, options, ACQUIRE_KEYS);
}
