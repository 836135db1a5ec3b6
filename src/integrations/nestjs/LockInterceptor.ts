/**
 * `LockInterceptor`: takes the lock of a `@WithLock` handler around `next.handle()`, so it is held
 * until the handler's Observable ends, and translates lock failures for the client.
 */
import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { catchError, defer, from, mergeMap, Observable, throwError } from 'rxjs';
import type { LockError } from '../../errors/errors.js';
import { cancelsOnDisconnect, untilClientLeaves } from './clientDisconnect.js';
import { classify, httpException, type LockErrorOptions, type LockFailure } from './lockErrorResponses.js';
import type { LockSettings } from './lockResources.js';
import { LOCK_SETTINGS, WITH_LOCK_METADATA } from './tokens.js';
import { lockOperator, type LockSpec } from './lockSpec.js';
import { holdWhileIterating, isSubscriptionRoot } from './subscriptionLock.js';

/**
 * The calls already locked by an outer `LockInterceptor`: with `@WithLock` on a class and on one
 * of its handlers, Nest runs the interceptor twice for that handler; the inner one must not take
 * a second lock (on the same key it would wait for the first until its `waitTimeout`).
 */
const locked = new WeakSet<ExecutionContext>();

/**
 * Runs `@WithLock` handlers under their lock. `@WithLock` applies it; register it yourself only to
 * lock handlers of a whole application (`APP_INTERCEPTOR`): handlers without `@WithLock` pass
 * through untouched.
 *
 * - The lock comes from the handler's `@WithLock`, `@WithPermit`, `@WithReadLock` or
 *   `@WithWriteLock` (or its class's): its key or keys computed from the request.
 * - The handler is called once the lock is held, and the lock is released when its stream ends:
 *   complete, error, or unsubscribe (client gone, see `OnDisconnect`).
 * - Failures become `HttpException`s or `RpcException`s per `LockErrorOptions`; the handler's own
 *   other errors pass through untouched.
 *
 * @example
 * ```ts
 * // lock every handler that has @WithLock, in any module
 * providers: [{ provide: APP_INTERCEPTOR, useClass: LockInterceptor }]
 * ```
 */
export class LockInterceptor implements NestInterceptor {
  constructor(
    private readonly settings: LockSettings,
    private readonly reflector: Reflector,
  ) {}

  /** Wraps `next.handle()` in the handler's lock (see the class). */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.getAllAndOverride<LockSpec | undefined>(WITH_LOCK_METADATA, [context.getHandler(), context.getClass()]);
    if (spec === undefined || locked.has(context)) return next.handle();
    locked.add(context);
    const errors: LockErrorOptions = { ...this.settings.errors, ...spec.errors };
    let work: Observable<unknown>;
    /** Whether the handler was called: until then, a client that leaves withdraws it from the line. */
    let started = false;
    try {
      const lock = lockOperator(spec, this.settings.locker, context);
      const handler = defer(() => {
        started = true;
        return next.handle();
      });
      work =
        context.getType<string>() === 'graphql' && isSubscriptionRoot(context.getArgByIndex(3))
          ? holdWhileIterating(handler, lock, (error) => this.answer(error, context, errors))
          : handler.pipe(lock);
    } catch (error) {
      work = throwError(() => error);
    }
    if (context.getType() === 'http') {
      // 'cancel': the stream ends when the client leaves; 'finish': only while waiting for the lock
      const cancels = cancelsOnDisconnect(context, spec.onDisconnect);
      work = work.pipe(untilClientLeaves(context, cancels ? undefined : () => !started));
    }
    return work.pipe(catchError((error: unknown) => this.answer(error, context, errors)));
  }

  private answer(error: unknown, context: ExecutionContext, errors: LockErrorOptions): Observable<never> {
    const failure = classify(error, errors);
    if (failure === undefined) return throwError(() => error);
    if (errors.map !== undefined) {
      const mapped = errors.map(error as LockError, context);
      if (mapped !== undefined) return throwError(() => mapped);
    }
    const type = context.getType<string>();
    if (type === 'http') {
      if (failure.retryAfter !== undefined) setRetryAfter(context, failure.retryAfter);
      return throwError(() => httpException(failure));
    }
    if (type === 'rpc') return rpcException(failure, error);
    if (type === 'graphql') return graphqlError(failure);
    return throwError(() => error);
  }
}

Injectable()(LockInterceptor);
Inject(LOCK_SETTINGS)(LockInterceptor, undefined, 0);
Inject(Reflector)(LockInterceptor, undefined, 1);

function setRetryAfter(context: ExecutionContext, seconds: number): void {
  // Express's `res.header()` and Fastify's `reply.header()` alike; nothing once headers went out.
  const response = context.switchToHttp().getResponse<{ header?: (name: string, value: string) => unknown; headersSent?: boolean; sent?: boolean }>();
  if (response?.headersSent === true || response?.sent === true || typeof response?.header !== 'function') return;
  response.header('Retry-After', String(seconds));
}

/**
 * The failure as a `GraphQLError` whose `extensions` say what it is: `code` (`LOCK_BUSY`, …, as
 * for RPC), the HTTP `status` it would have had, and `retryAfter` (seconds) where there is one.
 * (An `HttpException` would reach a client of Nest's Apollo driver as `INTERNAL_SERVER_ERROR` for
 * every status but 400, 401, 403 and 422.) `graphql` is loaded only when a resolver fails; if it
 * cannot be, the `HttpException` goes out instead.
 */
function graphqlError(failure: LockFailure): Observable<never> {
  return from(import('graphql')).pipe(
    catchError(() => throwError(() => httpException(failure))),
    mergeMap(({ GraphQLError }) =>
      throwError(
        () =>
          new GraphQLError(failure.message, {
            extensions: {
              code: failure.code,
              status: failure.status,
              ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
            },
          }),
      ),
    ),
  );
}

/**
 * The failure as an `RpcException` (loaded only when a microservice handler fails, so
 * `@nestjs/microservices` stays optional). Its error is `{ status: 'error', code, statusCode,
 * message }`.
 */
function rpcException(failure: LockFailure, original: unknown): Observable<never> {
  return from(import('@nestjs/microservices')).pipe(
    catchError(() => throwError(() => original)),
    mergeMap(({ RpcException }) =>
      throwError(() => new RpcException({ status: 'error', code: failure.code, statusCode: failure.status, message: failure.message })),
    ),
  );
}
