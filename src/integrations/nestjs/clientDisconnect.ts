/**
 * Ending a handler's stream when its HTTP client goes away — but only a stream whose end stops
 * the work. Unsubscribing from a Promise-based handler would release the lock while its Promise
 * still runs, and let a second handler overlap it; such handlers keep the lock until they finish.
 */
import { HttpException, type ExecutionContext } from '@nestjs/common';
import { Observable, type MonoTypeOperatorFunction } from 'rxjs';

/**
 * What a `@WithLock` HTTP handler does when its client disconnects before the response:
 * - `'cancel'`: the handler's stream is unsubscribed and the lock released at once;
 * - `'finish'`: a started handler runs to its end and holds the lock until then (the answer is
 *   dropped); one still waiting for its lock is withdrawn from the line and never called;
 * - `'auto'`: `'cancel'` for a handler declared to return an `Observable` (its decorator
 *   metadata says so) and not `async`; `'finish'` for every other handler, whose work (a Promise)
 *   unsubscribing could not stop. `@Sse()` handlers are always cancelled (Nest does it).
 *
 * @example
 * ```ts
 * @Get(':id/report')
 * @WithLock('report:{params.id}', { onDisconnect: 'cancel' }) // build$ stops when unsubscribed
 * report(@Param('id') id: string) {
 *   return lastValueFrom(this.reports.build$(id)); // a Promise, but one that cancelling stops
 * }
 * ```
 */
export type OnDisconnect = 'auto' | 'cancel' | 'finish';

/** Nest's metadata key of `@Sse()` handlers (`SSE_METADATA`), stable since Nest 7. */
const SSE_METADATA = '__sse__';

type Reflection = { getMetadata?: (key: unknown, target: object, property?: string | symbol) => unknown };

/** Whether the handler of `context` is to be unsubscribed when its client leaves. */
export function cancelsOnDisconnect(context: ExecutionContext, mode: OnDisconnect): boolean {
  if (mode !== 'auto') return mode === 'cancel';
  const handler = context.getHandler() as ((...args: unknown[]) => unknown) & Record<symbol, unknown>;
  const reflect = Reflect as unknown as Reflection;
  if (reflect.getMetadata?.(SSE_METADATA, handler) === true) return false; // Nest's own watcher unsubscribes
  const tag = handler[Symbol.toStringTag];
  if (tag === 'AsyncFunction' || tag === 'AsyncGeneratorFunction') return false;
  const returnType = reflect.getMetadata?.('design:returntype', context.getClass().prototype as object, handler.name);
  return typeof returnType === 'function' && typeof (returnType.prototype as { subscribe?: unknown } | undefined)?.subscribe === 'function';
}

interface RawResponse {
  readonly writableFinished?: boolean;
  readonly destroyed?: boolean;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
}

/**
 * The status of the `HttpException` a cancelled handler's stream ends with when its client left
 * (nginx's "client closed request"); nobody receives it, and Nest does not log it.
 *
 * @example
 * ```ts
 * // in an exception filter of yours: ignore requests whose client is gone
 * if (exception instanceof HttpException && exception.getStatus() === CLIENT_CLOSED_REQUEST) return;
 * ```
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Errors the stream with a 499 `HttpException` (which Nest does not log) as soon as the HTTP
 * client disconnects before its response was sent, unsubscribing from the source. Nest itself
 * does this for `@Sse()` routes and, from Nest 12, for handlers returning an Observable; earlier
 * versions leave such a handler running after its client left.
 * `stillCancellable` says whether the stream may still be ended so (by default always): a
 * handler that must finish can still be dropped while it waits for its lock and has not started.
 */
export function untilClientLeaves<T>(context: ExecutionContext, stillCancellable: () => boolean = () => true): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      const response = context.switchToHttp().getResponse<{ raw?: RawResponse } & RawResponse>();
      const raw: RawResponse | undefined = response?.raw ?? response;
      const leave = () => {
        if (raw?.writableFinished !== true && stillCancellable()) subscriber.error(new HttpException('Client closed the request', CLIENT_CLOSED_REQUEST));
      };
      if (raw === undefined || typeof raw.once !== 'function') return source.subscribe(subscriber);
      if (raw.destroyed === true) {
        leave();
        return;
      }
      raw.once('close', leave);
      const subscription = source.subscribe(subscriber);
      return () => {
        raw.removeListener('close', leave);
        subscription.unsubscribe();
      };
    });
}
