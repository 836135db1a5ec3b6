/**
 * Checks the options of semaphores (see ./PermitOptions.ts): `limit` and `permits` as positive
 * safe integers with `permits ≤ limit`, and the acquisition's own options as `withLock`/`acquire`
 * check them, without `reentrant` (permits never join an enclosing hold). A read-write lock's
 * options are a mutex's, checked by ./validate.ts.
 */
import { LockOptionsError } from '../errors/errors.js';
import type { AcquirePermitOptions, PermitOptions } from './PermitOptions.js';
import { ACQUIRE_KEYS, checkOperatorOptions, resolveOperatorOptions, type AcquireSettings } from './validate.js';

/** What the engine needs of a shared acquisition: its settings, weight and capacity. */
export interface SharedSettings {
  readonly settings: AcquireSettings;
  /** The permits it takes. */
  readonly weight: number;
  /** The permits the key may have held at once, as this acquisition asks. */
  readonly capacity: number;
}

/** A semaphore acquisition's own options: an acquisition's, without `reentrant`. */
export const PERMIT_LEASE_KEYS: readonly string[] = ACQUIRE_KEYS.filter((key) => key !== 'reentrant');
const PERMIT_OPERATOR_KEYS: readonly string[] = [...PERMIT_LEASE_KEYS, 'onBusy', 'limit', 'permits'];
const PERMIT_ACQUIRE_KEYS: readonly string[] = [...PERMIT_LEASE_KEYS, 'limit', 'permits'];

/** Validates `withPermit`/`usingPermit` (`operator`) or `acquirePermit` options. */
export function resolvePermitOptions(options: PermitOptions | AcquirePermitOptions | undefined, defaults: AcquireSettings, operator: boolean): SharedSettings {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('options', 'an object of permit options with at least { limit }', options);
  }
  const { limit, permits, ...rest } = options;
  const capacity = checkCount('limit', limit, Number.MAX_SAFE_INTEGER);
  const weight = permits === undefined ? 1 : checkCount('permits', permits, capacity);
  const allowed = operator ? PERMIT_OPERATOR_KEYS : PERMIT_ACQUIRE_KEYS;
  const settings = resolveOperatorOptions(rest, defaults, allowed);
  return { settings, weight, capacity };
}

function checkCount(option: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? 'a positive safe integer (1 to 9007199254740991)' : `an integer from 1 to ${max} (the limit)`;
    throw new LockOptionsError(option, range, value);
  }
  return value;
}

/** Checks `limit` and `permits` alone (positive safe integers, `permits ≤ limit`); returns them. */
export function checkPermitCount(limit: unknown, permits: unknown): { limit: number; permits: number | undefined } {
  const capacity = checkCount('limit', limit, Number.MAX_SAFE_INTEGER);
  return { limit: capacity, permits: permits === undefined ? undefined : checkCount('permits', permits, capacity) };
}

/** The free `withPermit`'s option names: the operators', and the `locker` it takes out itself. */
const FREE_PERMIT_OPERATOR_KEYS: readonly string[] = [...PERMIT_OPERATOR_KEYS, 'locker'];

/** Checks the free `withPermit`'s options (its `locker` included) without a locker at hand. */
export function checkPermitOptions(options: PermitOptions | undefined): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('options', 'an object of permit options with at least { limit }', options);
  }
  const { limit, permits, ...rest } = options;
  const capacity = checkCount('limit', limit, Number.MAX_SAFE_INTEGER);
  if (permits !== undefined) checkCount('permits', permits, capacity);
  checkOperatorOptions(rest, FREE_PERMIT_OPERATOR_KEYS);
}
