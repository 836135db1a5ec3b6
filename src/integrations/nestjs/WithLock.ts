/** `@WithLock(key | keys, options?)`: runs a handler (or every handler of a class) under a lock, or under several. */
import { LockOptionsError } from '../../errors/errors.js';
import type { AcquireOptions } from '../../options/LockerOptions.js';
import { ACQUIRE_KEYS } from '../../options/validate.js';
import { lockDecorator, type HandlerLockOptions } from './lockDecorator.js';
import { compileLockKey, type LockKeys } from './lockKey.js';

/**
 * Options of one `@WithLock`: the locker's acquisition options (`ttl`, `waitTimeout`, `retry`,
 * `renew`, `onLost`; the module's `locker` options by default), how failures are answered, and
 * what a client disconnect does.
 *
 * @example
 * ```ts
 * @WithLock('export:{params.id}', {
 *   ttl: 60_000,                                  // lease length, renewed while the export runs
 *   waitTimeout: 0,                               // one attempt: busy → answered at once
 *   errors: { busyStatus: 503, retryAfter: 30 },  // 503 + Retry-After: 30
 *   onDisconnect: 'finish',                       // a started export runs to its end
 * })
 * ```
 */
export interface WithLockOptions extends AcquireOptions, HandlerLockOptions {}

/**
 * Holds the lock on `key` while the handler runs: until the Observable it returns ends (streamed
 * responses and `@Sse()` streams included), or the Promise it returns settles. Two requests that
 * resolve to the same key — on any instance sharing the store — never run the handler at the same
 * time: the second waits up to `waitTimeout`, then is answered 409 Conflict (see
 * {@link LockErrorOptions}). On a class, every handler of the class is locked; a handler's own
 * `@WithLock` replaces the class's.
 *
 * Request handlers only: on a provider's method that Nest calls without a request (a `@Cron` job,
 * an `@OnEvent` listener) no interceptor runs and `@WithLock` does nothing — use {@link Locked}.
 *
 * Needs `LockModule` (imported in the handler's module, or global). Works on HTTP controllers
 * (Express and Fastify) and microservice handlers (`@MessagePattern`, `@EventPattern`: the key
 * comes from `{data…}`, failures arrive as `RpcException`) and GraphQL resolvers (the key comes
 * from `{args…}`, failures arrive as `GraphQLError`s whose `extensions` carry the `code` and
 * `status`; a `@Subscription` holds its lock while its events flow; a `@ResolveField` is locked
 * only with the GraphQL module's `fieldResolverEnhancers: ['interceptors']`); other contexts need a
 * key function.
 *
 * Several keys — `@WithLock(['account:{body.from}', 'account:{body.to}'])` — lock them all or
 * none, as `locker.withLocks` does: taken in one global order (two handlers with overlapping sets
 * cannot deadlock), a key named twice taken once, one `waitTimeout` for the whole set, and every
 * key taken given back when the wait fails. A key function may return a list of keys, as many as
 * the request names (see {@link LockKeys}): they are locked the same way, with the other keys of
 * the array if there are any; an empty list locks nothing.
 *
 * @param key `'order:{params.id}'`: a template over `params`, `query`, `body`, `headers`, `user`
 * (HTTP), `data` (RPC) or `args` (GraphQL) — a value the request lacks is answered 400, never locked as
 * "undefined" — or a function of the `ExecutionContext` that returns a key or a list of keys (see
 * {@link LockKeys}); or a non-empty array of them, for a lock on every key.
 * @param options `ttl`, `waitTimeout`, `retry`, `renew`, `onLost` for this lock, `errors`,
 * `onDisconnect`. Checked at once: a bad option throws `LockOptionsError` when the class is
 * defined.
 *
 * @example
 * ```ts
 * @Controller('orders')
 * export class OrdersController {
 *   // one payment per order at a time, across every instance of the service
 *   @Post(':id/pay')
 *   @WithLock('order:{params.id}', { waitTimeout: 0 }) // busy: 409 at once
 *   pay(@Param('id') id: string): Promise<Receipt> {
 *     return this.payments.pay(id);
 *   }
 *
 *   // the lock is held as long as the client listens
 *   @Sse(':id/progress')
 *   @WithLock('order-progress:{params.id}')
 *   progress(@Param('id') id: string): Observable<MessageEvent> {
 *     return this.payments.progress$(id);
 *   }
 * }
 * ```
 */
export function WithLock(key: LockKeys | readonly LockKeys[], options: WithLockOptions = {}): ClassDecorator & MethodDecorator {
  if (!Array.isArray(key)) return lockDecorator('WithLock', { kind: 'lock', key: compileLockKey(key as LockKeys) }, options, ACQUIRE_KEYS);
  if (key.length === 0) throw new LockOptionsError('keys', 'a non-empty array of key templates or functions', key);
  return lockDecorator('WithLock', { kind: 'locks', keys: key.map((k: LockKeys) => compileLockKey(k)) }, options, ACQUIRE_KEYS);
}
