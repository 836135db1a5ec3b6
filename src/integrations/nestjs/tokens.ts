/**
 * The injection tokens and metadata keys of the NestJS integration. They are `Symbol.for(...)`
 * keys, so the ESM and the CommonJS copies of this package (both may be loaded) agree on them.
 */

/**
 * Injection token of the {@link rxjs-lock!Locker} that `LockModule` provides. Inject it with
 * `@InjectLocker()` (or `@Inject(LOCKER)`).
 *
 * @example
 * ```ts
 * const locker = app.get<Locker>(LOCKER);
 * ```
 */
export const LOCKER: unique symbol = Symbol.for('rxjs-lock/nestjs:locker');

/** @internal Token of what `LockInterceptor` needs from `LockModule` (the locker and its error defaults). */
export const LOCK_SETTINGS: unique symbol = Symbol.for('rxjs-lock/nestjs:settings');

/** @internal Token of the locker, store and clients the module opened and must close. */
export const LOCK_RESOURCES: unique symbol = Symbol.for('rxjs-lock/nestjs:resources');

/** @internal Metadata key under which `@WithLock` records its lock on a handler or class. */
export const WITH_LOCK_METADATA = 'rxjs-lock:with-lock';
