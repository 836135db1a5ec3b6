/**
 * The lock of a GraphQL `@Subscription` resolver, held while its events flow. The resolver returns
 * an AsyncIterator at once and Nest waits for the interceptor's stream to end before the GraphQL
 * server reads it, so the lock cannot be held by that stream: it is held by a subscription of its
 * own (the handler's lock operator over a stream that never ends by itself), and the iterator the
 * client reads gives it back when it ends — done, `return()` (the client unsubscribed) or an
 * error. A lease lost meanwhile ends the iterator with that failure.
 */
import { AsyncResource } from 'node:async_hooks';
import { defer, Observable, type MonoTypeOperatorFunction, type Subscription } from 'rxjs';

/** Is `info` (a resolver's fourth argument) that of a subscription's root field? */
export function isSubscriptionRoot(info: unknown): boolean {
  const i = info as { operation?: { operation?: unknown }; path?: { prev?: unknown } } | null | undefined;
  return i?.operation?.operation === 'subscription' && i.path !== undefined && i.path.prev === undefined;
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';

/**
 * `handler` (the resolver's call) under `lock`, for a subscription: the resolver is called once the
 * lock is held, as for any handler; what it returns, when it is an AsyncIterable, goes out wrapped
 * so that the lock lasts until the iteration ends, and its steps run in the lock's context, as the
 * resolver did (with a reentrant locker, what they call on the key joins the lock); anything else
 * ends the hold at once. A failure of the lock before the resolver returned is the stream's error,
 * as for any handler; after it, the iterator's (`answer` turns either into what the client gets).
 */
export function holdWhileIterating(
  handler: Observable<unknown>,
  lock: MonoTypeOperatorFunction<unknown>,
  answer: (error: unknown) => Observable<never>,
): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    let handed = false;
    let iterator: LockedIterator | undefined;
    let held: Subscription | undefined;
    let ended = false;
    /** Gives the lock back (now, or as soon as the hold's subscription exists: a synchronous end). */
    const endHold = () => {
      ended = true;
      held?.unsubscribe();
    };
    // the stream the lock operator holds the lock for: it ends when the iteration does
    const hold = new Observable<never>(() => {
      // the context the lock operator subscribed in: the lock's
      const lockContext = new AsyncResource('rxjs-lock:subscription');
      const inner = handler.subscribe({
        next: (result) => {
          if (handed) return;
          handed = true;
          if (!isAsyncIterable(result)) {
            subscriber.next(result);
            subscriber.complete();
            endHold();
            return;
          }
          let source: AsyncIterator<unknown>;
          try {
            source = result[Symbol.asyncIterator]();
          } catch (error) {
            // (thrown here, it would crash the process and leave the lock held)
            subscriber.error(error);
            endHold();
            return;
          }
          iterator = new LockedIterator(source, endHold, lockContext);
          subscriber.next(iterator);
          subscriber.complete();
        },
        error: (error: unknown) => {
          if (!handed) subscriber.error(error);
          endHold();
        },
        complete: () => {
          if (handed) return;
          subscriber.complete();
          endHold();
        },
      });
      return () => inner.unsubscribe();
    }).pipe(lock);
    held = hold.subscribe({
      error: (error: unknown) => {
        if (!handed) subscriber.error(error);
        // (deferred: an errors.map that throws its answer instead of returning it must not throw here)
        else iterator?.fail(defer(() => answer(error)));
      },
    });
    // (a hold that ended synchronously did so before `held` was set)
    if (ended) held.unsubscribe();
    return () => {
      if (!handed) endHold();
    };
  });
}

/**
 * The client's iterator: the resolver's, which gives the lock back when it ends. Its calls run in
 * `lockContext`, not in the GraphQL server's: the source's work is the lock's.
 */
class LockedIterator implements AsyncIterableIterator<unknown> {
  private ended = false;
  private failure: Promise<never> | undefined;
  private failNow: ((error: unknown) => void) | undefined;

  constructor(
    private readonly source: AsyncIterator<unknown>,
    private readonly release: () => void,
    private readonly lockContext: AsyncResource,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<unknown> {
    return this;
  }

  /** The lock failed while the client iterates: the next (or pending) `next()` rejects with `error$`'s error. */
  fail(error$: Observable<never>): void {
    error$.subscribe({
      error: (error: unknown) => {
        this.end();
        if (this.failNow !== undefined) this.failNow(error);
        else this.failure = Promise.reject(error);
        this.failure?.catch(() => undefined);
        // (the Promise also catches a return() that throws: thrown here, it would crash the process)
        void new Promise((resolve) => resolve(this.inLockContext(() => this.source.return?.()))).catch(() => undefined);
      },
    });
  }

  async next(): Promise<IteratorResult<unknown>> {
    if (this.failure !== undefined) return this.failure;
    if (this.ended) return { done: true, value: undefined };
    const lost = new Promise<never>((_, reject) => (this.failNow = reject));
    try {
      const result = await Promise.race([this.inLockContext(() => this.source.next()), lost]);
      if (result.done) this.end();
      return result;
    } catch (error) {
      this.end();
      throw error;
    } finally {
      this.failNow = undefined;
    }
  }

  async return(value?: unknown): Promise<IteratorResult<unknown>> {
    this.end();
    const result = await this.inLockContext(() => this.source.return?.(value));
    return result ?? { done: true, value };
  }

  async throw(error?: unknown): Promise<IteratorResult<unknown>> {
    this.end();
    const sourceThrow = this.source.throw;
    if (sourceThrow !== undefined) return this.inLockContext(() => sourceThrow.call(this.source, error));
    throw error;
  }

  /** `call` (a call of the source) in the lock's context. */
  private inLockContext<T>(call: () => T): T {
    return this.lockContext.runInAsyncScope(call);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
  }
}
