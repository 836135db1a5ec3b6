/**
 * The options of the free operators (`withLock`, `usingLock`): an acquisition's options plus the
 * locker to use, checked and split once for both.
 */
import type { Locker } from '../engine/Locker.js';
import { LockOptionsError } from '../errors/errors.js';
import type { LockOperatorOptions } from '../options/LockerOptions.js';
import { checkOperatorOptions, OPERATOR_KEYS, validateKey, validateKeys } from '../options/validate.js';

/**
 * Options of the free {@link withLock} and {@link usingLock}: an acquisition's options plus the locker to use.
 *
 * @example
 * ```ts
 * import { withLock, type WithLockOptions } from 'rxjs-lock';
 *
 * const options: WithLockOptions = { locker, ttl: 10_000, waitTimeout: 2_000 };
 * rebuildIndex$.pipe(withLock('search:index', options)).subscribe();
 * ```
 */
export interface WithLockOptions extends LockOperatorOptions {
  /**
   * The locker to take the lock with.
   * @default the process-wide default locker (see `setDefaultLocker`), in memory unless replaced
   */
  locker?: Locker;
}

const FREE_OPERATOR_KEYS = [...OPERATOR_KEYS, 'locker'];

/**
 * Validates `key` and `options` (throwing `LockOptionsError`), and splits off the locker:
 * `undefined` means the default locker, resolved at subscription.
 */
export function chooseLocker(
  key: string,
  options: WithLockOptions | undefined,
): { locker: Locker | undefined; acquireOptions: LockOperatorOptions | undefined } {
  validateKey(key);
  return splitLocker(options, FREE_OPERATOR_KEYS);
}

/** {@link chooseLocker} for a multi-key operator: validates `keys` (the array, then each key). */
export function chooseLockerForKeys(
  keys: readonly string[],
  options: WithLockOptions | undefined,
): { locker: Locker | undefined; acquireOptions: LockOperatorOptions | undefined } {
  validateKeys(keys);
  return splitLocker(options, FREE_OPERATOR_KEYS);
}

/** Validates `options` (the names in `allowed`) and splits off the locker. */
export function splitLocker(
  options: WithLockOptions | undefined,
  allowed: readonly string[],
): { locker: Locker | undefined; acquireOptions: LockOperatorOptions | undefined } {
  if (options === undefined) return { locker: undefined, acquireOptions: undefined };
  checkOperatorOptions(options, allowed);
  const { locker, ...acquireOptions } = options;
  if (locker !== undefined && (typeof locker !== 'object' || locker === null || typeof locker.withLock !== 'function' || typeof locker.using !== 'function')) {
    throw new LockOptionsError('locker', 'a Locker made by createLocker()', locker);
  }
  return { locker, acquireOptions };
}
