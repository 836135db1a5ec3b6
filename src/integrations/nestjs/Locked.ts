/**
 * `@Locked(key, options?)`: runs a method of a Nest provider — a scheduled job, an event listener,
 * a queue processor — under a lock, whoever calls it. `@WithLock` cannot: Nest runs interceptors
 * around request handlers only.
 */
import { Inject } from '@nestjs/common';
import { defer, isObservable, lastValueFrom, type Observable } from 'rxjs';
import type { Locker } from '../../engine/Locker.js';
import { LockOptionsError } from '../../errors/errors.js';
import type { LockOperatorOptions, OnBusy } from '../../options/LockerOptions.js';
import { checkOperatorOptions, validateKey } from '../../options/validate.js';
import { LOCKER } from './tokens.js';

/**
 * The key of a `@Locked` method: a fixed key, or a function of the method's arguments (called with
 * the provider as `this`, before the lock is taken) that returns a key or a list of keys. A list is
 * locked all or none, as `locker.usingLocks` does (one global order, one `waitTimeout`, at most 64
 * distinct keys); an empty list names nothing to protect, and the method then runs without a lock.
 *
 * @example
 * ```ts
 * @Locked('job:nightly-digest', { onBusy: 'skip' })                     // a fixed key
 * @Locked((order: Order) => order.items.map((item) => `sku:${item.sku}`)) // a key per argument value
 * ```
 */
export type LockedKey<A extends unknown[] = never[]> = string | ((...args: A) => string | readonly string[]);

/**
 * Options of `@Locked`: those of `locker.using` (`ttl`, `waitTimeout`, `retry`, `renew`, `onLost`,
 * `reentrant`, `onBusy`; the module's `locker` options by default).
 *
 * @example
 * ```ts
 * const options: LockedOptions = { onBusy: 'skip', ttl: 60_000 }; // one instance runs each tick; renewed while it runs
 * ```
 */
export interface LockedOptions extends LockOperatorOptions {}

/** The property of a provider that holds its module's locker, injected for its `@Locked` methods. */
const LOCKED_LOCKER: unique symbol = Symbol.for('rxjs-lock/nestjs:locked-locker');

/** The classes whose instances get the locker injected (one property injection per class). */
const injected = new WeakSet<object>();

/**
 * The decorator `@Locked` returns, for methods whose first parameters are those its key function
 * takes (a key function may take fewer: a queue processor's `(job, token)` keyed by the job) and
 * that return a Promise or nothing (a method that returns an Observable uses `withLock` in its body).
 *
 * @typeParam M The decorated method's type, kept as it is declared.
 * @example
 * ```ts
 * const perAccount: LockedMethodDecorator<[Transfer]> = Locked((t: Transfer) => [`account:${t.from}`, `account:${t.to}`]);
 * ```
 */
export type LockedMethodDecorator<A extends unknown[]> = <M extends (...args: [...A, ...never[]]) => Promise<unknown> | void>(
  target: object,
  name: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;

/**
 * The decorator `@Locked(key, { onBusy: 'skip' })` returns (also with an `onBusy` typed `OnBusy`,
 * which may be `'skip'`): as {@link LockedMethodDecorator}, for methods whose declared result
 * admits `undefined` — `Promise<T | undefined>`, `Promise<void>` or nothing — since a skipped call
 * resolves `undefined` without running the method. A method declared `Promise<T>` does not compile
 * (nor a generic `<T>(x: T) => Promise<T>`, nor overloads one of which excludes `undefined`):
 * declare it `Promise<T | undefined>`.
 *
 * @typeParam M The decorated method's type, kept as it is declared.
 * @example
 * ```ts
 * const onceAcrossInstances: SkippingMethodDecorator<never[]> = Locked('job:digest', { onBusy: 'skip' });
 * ```
 */
export type SkippingMethodDecorator<A extends unknown[]> = <M extends (...args: [...A, ...never[]]) => Promise<unknown> | void>(
  target: object,
  name: string | symbol,
  // (nothing more when M's result admits undefined; else a property no descriptor has, named for
  // the fix, so that the compiler refuses the decoration and says why)
  // (asked as "may a method resolving undefined stand for M": an `infer`red result would see only
  // the last of overloads, and `unknown` for a generic `<T>(x: T) => Promise<T>`)
  descriptor: TypedPropertyDescriptor<M> &
    (((...args: unknown[]) => Promise<undefined>) extends M
      ? unknown
      : { readonly 'with onBusy: skip, a skipped call resolves undefined: declare the method Promise<T | undefined>': never }),
) => void;

/**
 * Runs the method under the lock of `key`, on every call: the lock is taken first, the method is
 * called once it is held, and the lock is given back when the Promise it returns settles (at once
 * when it returns nothing). Two calls that
 * resolve to the same key, on any instance sharing the store, never run the method at the same
 * time. For the methods Nest calls without a request: `@Cron`, `@Interval` and `@Timeout` jobs of
 * `@nestjs/schedule`, `@OnEvent` listeners, BullMQ processors, or your own code.
 *
 * - **The call returns a Promise** of what the method's Promise resolved to (`undefined` for a
 *   method that returns nothing: it becomes asynchronous). A method that returns an Observable or
 *   a plain value does not compile: put `locker.withLock` in its body instead.
 * - **Busy**: with `onBusy: 'skip'` the call tries once and, when another holder has the key,
 *   resolves `undefined` without running the method (reported on `locker.events$` as `timed-out`
 *   with `skipped: true`): of instances whose timers fire together, one runs the job (one that
 *   fires after the run ended runs it again: see the scheduled-jobs guide); otherwise it waits up
 *   to `waitTimeout` and rejects with `LockTimeoutError`. With `onBusy: 'skip'` written in the
 *   decorator (or an `onBusy` of type `OnBusy`, which may be `'skip'`), the method must be declared
 *   to return `Promise<T | undefined>` (or `Promise<void>`, or nothing), or it does not compile (see
 *   {@link SkippingMethodDecorator}); options passed as a variable typed `LockedOptions` (whose
 *   `onBusy` is optional) are not checked so.
 * - **Lost** while the method runs (the holder froze, Redis was unreachable): the call rejects with
 *   `LockLostError` (with `onLost: 'notify'`, it resolves as the method does); the method's Promise
 *   cannot be stopped.
 * - **Await the call**, or leave it to a caller that handles rejections (`@nestjs/schedule` and
 *   `@nestjs/event-emitter` log them): a lock that cannot be taken rejects it, also for a method
 *   that returns nothing.
 * - **At shutdown**, call it from `beforeApplicationShutdown` or `onModuleDestroy`: on Nest 10,
 *   `LockModule` closes its locker before your providers' `onApplicationShutdown` hooks run there,
 *   and the call rejects with `LockerClosedError` (Nest 11 and 12 run the root module's first).
 * - **A key list made from data** (an event's items) is bounded by the multi-key limit: more than
 *   64 distinct keys reject the call with `LockOptionsError`.
 * - **Needs `LockModule`** (imported in the provider's module, or global): the module's locker is
 *   injected into the provider (a property of its own), so a provider whose module cannot see
 *   `LockModule` fails at start-up, never unlocked at run time. On an object Nest did not make, a call
 *   rejects with `LockOptionsError`.
 *
 * @param key The key (a non-empty string), or a function of the method's arguments returning a key
 * or a list of keys (see {@link LockedKey}).
 * @param options `locker.using` options (see {@link LockedOptions}). Checked at once: a bad one
 * throws `LockOptionsError` when the class is defined.
 *
 * @example
 * ```ts
 * import { Injectable } from '@nestjs/common';
 * import { Cron } from '@nestjs/schedule';
 * import { Locked } from 'rxjs-lock/nestjs';
 *
 * @Injectable()
 * export class DigestJob {
 *   // every instance fires the timer; one of them sends the digest, the others skip this tick
 *   @Cron('0 * * * *')
 *   @Locked('job:digest', { onBusy: 'skip', ttl: 60_000 })
 *   async send(): Promise<void> {
 *     await this.mailer.sendDigest();
 *   }
 *
 *   // one order per SKU at a time, across every instance
 *   @OnEvent('order.placed')
 *   @Locked((order: Order) => order.items.map((item) => `sku:${item.sku}`), { waitTimeout: 30_000 })
 *   async reserve(order: Order): Promise<void> {
 *     await this.stock.reserve(order);
 *   }
 * }
 * ```
 */
export function Locked<A extends unknown[] = never[]>(key: LockedKey<A>, options?: LockedOptions & { readonly onBusy?: 'wait' }): LockedMethodDecorator<A>;
// (onBusy written, and it may be 'skip': 'skip' itself, or an OnBusy such as `'skip' as OnBusy`)
export function Locked<A extends unknown[] = never[]>(key: LockedKey<A>, options: LockedOptions & { readonly onBusy: OnBusy }): SkippingMethodDecorator<A>;
export function Locked<A extends unknown[] = never[]>(key: LockedKey<A>, options?: LockedOptions): LockedMethodDecorator<A>;
export function Locked<A extends unknown[] = never[]>(key: LockedKey<A>, options: LockedOptions = {}): LockedMethodDecorator<A> {
  const keyOf = compileLockedKey(key);
  checkOperatorOptions(options);
  return <M extends (...args: [...A, ...never[]]) => Promise<unknown> | void>(
    target: object,
    name: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): void => {
    const method = descriptor?.value;
    if (typeof method !== 'function' || typeof target === 'function') {
      throw new LockOptionsError('Locked', 'a decorator of an instance method of a provider', String(name));
    }
    // Property injection: Nest sets the locker on every instance it makes of the class.
    if (!injected.has(target)) {
      injected.add(target);
      Inject(LOCKER)(target, LOCKED_LOCKER);
    }
    // (the method's arguments: the key function's first, then any others it ignores)
    const run = method as unknown as (...args: unknown[]) => unknown;
    const locked = function (this: { [LOCKED_LOCKER]?: Locker } | undefined, ...args: unknown[]): Promise<unknown> {
      const call = lockedCall(this?.[LOCKED_LOCKER], keyOf, options, name, () => run.apply(this, args), this, args as A);
      return lastValueFrom(call, { defaultValue: undefined });
    };
    Object.defineProperty(locked, 'name', { value: method.name });
    copyMetadata(method, locked);
    descriptor.value = locked as unknown as M;
  };
}

/** The call's work under its lock, as an Observable (one value at most: the work's last). */
function lockedCall<A extends unknown[]>(
  locker: Locker | undefined,
  keyOf: (self: unknown, args: A) => string | readonly string[],
  options: LockedOptions,
  name: string | symbol,
  run: () => unknown,
  self: unknown,
  args: A,
): Observable<unknown> {
  return defer(() => {
    if (locker === undefined) {
      throw new LockOptionsError('Locked', `a method of a provider made by Nest in a module that sees LockModule (${String(name)} has no locker)`, self);
    }
    const keys = keyOf(self, args);
    const work = () => toInput(run());
    if (!Array.isArray(keys)) return locker.using(keys as string, work, options);
    return keys.length === 0 ? defer(work) : locker.usingLocks(keys, work, options);
  });
}

/**
 * A method's result as work for `using`: an Observable (untyped code) as it is; anything else as a
 * Promise of it (a Promise as it is, a thenable followed, a plain value or nothing resolved).
 */
function toInput(result: unknown): Observable<unknown> | Promise<unknown> {
  return isObservable(result) ? result : Promise.resolve(result);
}

/** Checks a fixed key at once; a key function is called per call, with the provider as `this`. */
function compileLockedKey<A extends unknown[]>(key: LockedKey<A>): (self: unknown, args: A) => string | readonly string[] {
  if (typeof key === 'function') return (self, args) => key.apply(self, args);
  const fixed = validateKey(key);
  return () => fixed;
}

/**
 * Moves what other decorators recorded on the method (`@Cron`, `@OnEvent`, …: reflect-metadata on
 * the function) to the wrapper, so they work whichever order the decorators are written in.
 */
function copyMetadata(from: object, to: object): void {
  // (reflect-metadata's API, which Nest needs loaded: `Inject` above has used it already)
  const reflect = Reflect as unknown as MetadataReflect;
  for (const key of reflect.getOwnMetadataKeys(from)) reflect.defineMetadata(key, reflect.getOwnMetadata(key, from), to);
}

/** The part of reflect-metadata's `Reflect` that {@link copyMetadata} uses. */
interface MetadataReflect {
  getOwnMetadataKeys(target: object): unknown[];
  getOwnMetadata(key: unknown, target: object): unknown;
  defineMetadata(key: unknown, value: unknown, target: object): void;
}
