/**
 * The errors rxjs-lock reports. Each failure kind has its own class, because "someone else held
 * the lock for the whole wait" and "the store is broken" call for different reactions.
 *
 * Every error carries a brand (a `Symbol.for` key, shared by every copy of this module), so the
 * guards below work even when the ESM and the CommonJS builds are both loaded and `instanceof`
 * would say no.
 */

const BRAND = Symbol.for('rxjs-lock/error');

/** Names of the errors rxjs-lock raises. */
export type LockErrorName = 'LockTimeoutError' | 'LockStoreError' | 'LockLostError' | 'LockOptionsError';

/** Common base of every error raised by rxjs-lock. */
export abstract class LockError extends Error {
  abstract override readonly name: LockErrorName;
  /** @internal brand checked by {@link isLockError}. */
  readonly [BRAND] = true;
}

/** What a store call was doing when it failed. */
export type StoreOperation = 'acquire' | 'release' | 'extend';

/**
 * The lock stayed held by someone else for the whole wait (`waitTimeout`).
 *
 * @example
 * ```ts
 * locker.acquire('report').pipe(
 *   catchError((e) => (isLockTimeoutError(e) ? of(null) : throwError(() => e))),
 * );
 * ```
 */
export class LockTimeoutError extends LockError {
  readonly name = 'LockTimeoutError' as const;
  constructor(
    /** The key that stayed held (without the locker's `keyPrefix`). */
    readonly key: string,
    /** How long this acquisition waited, in milliseconds. */
    readonly waitedMs: number,
    /** How many times the store was asked. */
    readonly attempts: number,
  ) {
    super(`Lock "${key}" stayed held by another owner for ${Math.round(waitedMs)} ms (${attempts} attempt${attempts === 1 ? '' : 's'})`);
  }
}

/**
 * The store failed or did not answer within `commandTimeout`. The original failure is in
 * `cause`. Nothing is known about who holds the lock.
 */
export class LockStoreError extends LockError {
  readonly name = 'LockStoreError' as const;
  constructor(
    /** The key being worked on (without the locker's `keyPrefix`). */
    readonly key: string,
    /** The store call that failed. */
    readonly operation: StoreOperation,
    message: string,
    /** The underlying error, or a description of the timeout. */
    override readonly cause?: unknown,
  ) {
    super(`Lock store ${operation} of "${key}" failed: ${message}`, { cause });
  }
}

/** Why a held lease stopped protecting its holder. */
export type LockLostReason = 'expired' | 'taken-over' | 'store-unreachable';

/**
 * A lease that was held is no longer protecting its holder: it expired, another owner took the
 * key, or the store could not be reached to renew it before its deadline.
 */
export class LockLostError extends LockError {
  readonly name = 'LockLostError' as const;
  constructor(
    readonly key: string,
    readonly token: string,
    readonly reason: LockLostReason,
    override readonly cause?: unknown,
  ) {
    super(`Lock "${key}" was lost (${reason})`, { cause });
  }
}

/**
 * An option or argument is invalid. `option` names it, `allowed` says what is accepted and
 * `received` is what was passed. Raised synchronously, when the locker, Observable or operator is
 * created, so nothing is acquired.
 */
export class LockOptionsError extends LockError {
  readonly name = 'LockOptionsError' as const;
  constructor(
    /** The option or argument at fault, e.g. `ttl` or `key`. */
    readonly option: string,
    /** What is accepted, e.g. `an integer from 1 to 2147483647 (ms)`. */
    readonly allowed: string,
    /** The rejected value. */
    readonly received: unknown,
  ) {
    super(`Invalid ${option}: expected ${allowed}, received ${describe(received)}`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

/** Is `e` an error raised by rxjs-lock (any copy of it)? Optionally, of the given kind. */
export function isLockError(e: unknown, name?: LockErrorName): e is LockError {
  if (typeof e !== 'object' || e === null || (e as Record<symbol, unknown>)[BRAND] !== true) return false;
  return name === undefined || (e as LockError).name === name;
}

/** Is `e` a {@link LockTimeoutError}? Works across ESM and CommonJS copies. */
export const isLockTimeoutError = (e: unknown): e is LockTimeoutError => isLockError(e, 'LockTimeoutError');
/** Is `e` a {@link LockStoreError}? Works across ESM and CommonJS copies. */
export const isLockStoreError = (e: unknown): e is LockStoreError => isLockError(e, 'LockStoreError');
/** Is `e` a {@link LockLostError}? Works across ESM and CommonJS copies. */
export const isLockLostError = (e: unknown): e is LockLostError => isLockError(e, 'LockLostError');
/** Is `e` a {@link LockOptionsError}? Works across ESM and CommonJS copies. */
export const isLockOptionsError = (e: unknown): e is LockOptionsError => isLockError(e, 'LockOptionsError');
