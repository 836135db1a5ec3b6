/** `@WithPermit(key, { limit, permits? })`: runs a handler (or every handler of a class) while holding permits of a counting semaphore. */
import { LockOptionsError } from '../../errors/errors.js';
import type { AcquirePermitOptions } from '../../options/PermitOptions.js';
import { checkPermitCount, PERMIT_LEASE_KEYS } from '../../options/validatePermits.js';
import { lockDecorator, type HandlerLockOptions } from './lockDecorator.js';
import { compileLockKey, type LockKey } from './lockKey.js';

/**
 * Options of one `@WithPermit`: `limit` (required) and `permits` of the semaphore, the
 * acquisition's options (`ttl`, `waitTimeout`, `retry`, `renew`, `onLost`; the module's `locker`
 * options by default), how failures are answered and what a client disconnect does.
 *
 * @example
 * ```ts
 * @WithPermit('renderer', { limit: 4, waitTimeout: 0, errors: { busyStatus: 503, retryAfter: 5 } })
 * ```
 */
export interface WithPermitOptions extends AcquirePermitOptions, HandlerLockOptions {}

/**
 * Runs the handler while `options.permits` (default 1) of the `options.limit` permits of the
 * semaphore `key` are the request's: at most `limit` permits are held at once by requests whose
 * key resolves the same, across every instance sharing the store (`locker.withPermit`). A request
 * that finds none free waits, first come first served, up to `waitTimeout`, then is answered as
 * `@WithLock`'s are (409 Conflict by default). Held as `@WithLock` holds: until the handler's
 * Observable ends or its Promise settles; renewed meanwhile; given back on a client disconnect as
 * `onDisconnect` says.
 *
 * Needs `LockModule` and a store with shared locks (the in-memory and Redis stores; not a quorum
 * store: its requests fail with `LockCapabilityError`, answered 500). The semaphore `key` is apart
 * from the mutex `key` of `@WithLock`. Keys as `@WithLock`'s (templates with escaped values, or a
 * function of the `ExecutionContext`).
 *
 * @param key The semaphore's key: a template such as `'renderer:{params.tenant}'`, or a function
 * (see {@link LockKey}).
 * @param options `limit` (required), `permits`, `ttl`, `waitTimeout`, `retry`, `renew`, `onLost`,
 * `errors`, `onDisconnect`. Checked at once: a bad option throws `LockOptionsError` when the class
 * is defined.
 *
 * @example
 * ```ts
 * @Controller('reports')
 * export class ReportsController {
 *   // at most 4 renders at once per tenant, across every instance; a 5th waits up to 10 s
 *   @Post(':tenant/render')
 *   @WithPermit('renderer:{params.tenant}', { limit: 4, waitTimeout: 10_000 })
 *   render(@Param('tenant') tenant: string): Promise<Report> {
 *     return this.reports.render(tenant);
 *   }
 * }
 * ```
 */
export function WithPermit(key: LockKey, options: WithPermitOptions): ClassDecorator & MethodDecorator {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('WithPermit options', 'an object of permit options with at least { limit }', options);
  }
  const { limit, permits, ...rest } = options;
  const count = checkPermitCount(limit, permits);
  return lockDecorator('WithPermit', { kind: 'permit', key: compileLockKey(key), ...count }, rest, PERMIT_LEASE_KEYS);
}
