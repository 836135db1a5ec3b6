/**
 * Checks user input before anything touches a store, turning every mistake into a
 * `LockOptionsError` that names the option and what it accepts.
 */
import type { SchedulerLike } from 'rxjs';
import { LockOptionsError } from '../errors/errors.js';
import type { LockStore } from '../store/LockStore.js';
import { DEFAULTS, type AcquireOptions, type LockerOptions, type LockOperatorOptions, type OnBusy, type OnLost, type RetryDelay } from './LockerOptions.js';
import { leaseValidity } from './validity.js';
import { MAX_KEY_LENGTH, MAX_KEYS, MAX_MS, MAX_PASSES, MAX_PREFIX_LENGTH } from './limits.js';

/** Back-off as the engine uses it. */
export type RetryPolicy = { readonly minDelay: number; readonly jitter: number } | RetryDelay;

/** Per-acquisition settings, validated and with defaults applied. */
export interface AcquireSettings {
  readonly ttl: number;
  readonly waitTimeout: number;
  readonly retry: RetryPolicy;
  /** `false`: no renewal; otherwise the explicit interval, or `undefined` for ttl / 3. */
  readonly renew: false | { readonly interval: number | undefined };
  readonly onLost: OnLost;
  /** `true`: joins an enclosing hold and can be joined; else neither (see `AcquireOptions.reentrant`). */
  readonly reentrant?: boolean;
  /** True for `onBusy: 'skip'` (then `waitTimeout` is 0): a time-out is reported as a skip. */
  readonly skip?: boolean;
}

/** Locker settings, validated and with defaults applied. */
export interface LockerSettings extends AcquireSettings {
  readonly store: LockStore;
  readonly commandTimeout: number;
  readonly keyPrefix: string;
  readonly random: () => number;
  readonly scheduler: SchedulerLike | undefined;
  readonly localGate: boolean;
  /** `Infinity`: no long-wait reports. */
  readonly longWait: number;
  readonly cohort: { readonly maxPasses: number; readonly maxMs: number; readonly roundMs: number; readonly batchMs: number };
  /** How long a lost holder's key outlives its lease's deadline (0: off). */
  readonly lockDelay: number;
}

const ACQUIRE_KEYS = ['ttl', 'waitTimeout', 'retry', 'renew', 'onLost', 'reentrant'] as const;
const LOCKER_KEYS = [...ACQUIRE_KEYS, 'store', 'commandTimeout', 'keyPrefix', 'random', 'scheduler', 'localGate', 'longWait', 'cohort', 'lockDelay'] as const;
const RETRY_KEYS = ['minDelay', 'jitter'] as const;
const RENEW_KEYS = ['interval'] as const;

/**
 * A key must be a non-empty, well-formed string (no lone UTF-16 surrogate: stores encode keys as
 * UTF-8, where a lone surrogate turns into U+FFFD and two different keys would name one lock) of
 * at most {@link MAX_KEY_LENGTH} characters.
 */
export function validateKey(key: unknown, option = 'key'): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || !key.isWellFormed()) {
    throw new LockOptionsError(option, `a non-empty string of at most ${MAX_KEY_LENGTH} characters, without lone UTF-16 surrogates`, key);
  }
  return key;
}

/**
 * The keys of a multi-key acquisition: a non-empty array of valid keys (named `keys[i]` when one is
 * not), at most {@link MAX_KEYS} of them distinct. Duplicates are allowed and not counted: the
 * engine takes each distinct key once (a list made from data, such as an order's SKUs, repeats).
 */
export function validateKeys(keys: unknown, option = 'keys'): readonly string[] {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new LockOptionsError(option, `a non-empty array of at most ${MAX_KEYS} distinct keys`, keys);
  }
  keys.forEach((key: unknown, i) => validateKey(key, `${option}[${i}]`));
  if (keys.length > MAX_KEYS && new Set(keys).size > MAX_KEYS) {
    throw new LockOptionsError(option, `a non-empty array of at most ${MAX_KEYS} distinct keys`, keys);
  }
  return keys as readonly string[];
}

/** Validates locker options; `defaultStore` supplies the store when none is given. */
export function resolveLockerOptions(options: LockerOptions | undefined, defaultStore: () => LockStore): LockerSettings {
  const o = checkObject(options, 'options', LOCKER_KEYS, 'createLocker options');
  const store = o.store === undefined ? defaultStore() : checkStore(o.store);
  const keyPrefix = o.keyPrefix === undefined ? DEFAULTS.keyPrefix : o.keyPrefix;
  if (typeof keyPrefix !== 'string' || keyPrefix.length > MAX_PREFIX_LENGTH || !keyPrefix.isWellFormed()) {
    throw new LockOptionsError('keyPrefix', `a string of at most ${MAX_PREFIX_LENGTH} characters, without lone UTF-16 surrogates`, keyPrefix);
  }
  const random = o.random === undefined ? Math.random : o.random;
  if (typeof random !== 'function') throw new LockOptionsError('random', 'a function returning numbers in [0, 1)', random);
  const scheduler = o.scheduler;
  if (
    scheduler !== undefined &&
    (typeof scheduler !== 'object' ||
      scheduler === null ||
      typeof (scheduler as SchedulerLike).schedule !== 'function' ||
      typeof (scheduler as SchedulerLike).now !== 'function')
  ) {
    throw new LockOptionsError('scheduler', 'an RxJS SchedulerLike (with now() and schedule())', scheduler);
  }
  const acquire = resolveAcquireOptions(o, DEFAULT_ACQUIRE, LOCKER_KEYS);
  return {
    ...acquire,
    store,
    keyPrefix,
    random,
    scheduler,
    commandTimeout: o.commandTimeout === undefined ? DEFAULTS.commandTimeout : checkMs('commandTimeout', o.commandTimeout, 1),
    localGate: checkBoolean('localGate', o.localGate, DEFAULTS.localGate),
    longWait: o.longWait === undefined ? DEFAULTS.longWait : checkMs('longWait', o.longWait, 1, true),
    cohort: checkCohort(o.cohort),
    lockDelay: o.lockDelay === undefined ? DEFAULTS.lockDelay : checkMs('lockDelay', o.lockDelay, 0),
  };
}

/** Validates per-call options; returns `defaults` itself when there is nothing to override. */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: AcquireSettings,
  allowed: readonly string[] = ACQUIRE_KEYS,
  what = 'acquire options',
): AcquireSettings {
  if (options === undefined) return defaults;
  const o = checkObject(options, 'options', allowed, what);
  if (
    o.ttl === undefined &&
    o.waitTimeout === undefined &&
    o.retry === undefined &&
    o.renew === undefined &&
    o.onLost === undefined &&
    o.reentrant === undefined
  )
    return defaults;
  const ttl = o.ttl === undefined ? defaults.ttl : checkMs('ttl', o.ttl, 1);
  const renew = o.renew === undefined ? defaults.renew : checkRenew(o.renew);
  checkRenewFits(ttl, renew);
  return {
    ttl,
    waitTimeout: o.waitTimeout === undefined ? defaults.waitTimeout : checkMs('waitTimeout', o.waitTimeout, 0, true),
    retry: o.retry === undefined ? defaults.retry : checkRetry(o.retry),
    renew,
    onLost: o.onLost === undefined ? defaults.onLost : checkOnLost(o.onLost),
    reentrant: checkBoolean('reentrant', o.reentrant, defaults.reentrant === true),
  };
}

export { ACQUIRE_KEYS };

/** The option names of `withLock` and `using`: an acquisition's, plus `onBusy`. */
export const OPERATOR_KEYS: readonly string[] = [...ACQUIRE_KEYS, 'onBusy'];

/**
 * Validates the options of `withLock`/`using` (`allowed` lists the accepted names): with
 * `onBusy: 'skip'`, the settings make exactly one attempt and are marked `skip`.
 */
export function resolveOperatorOptions(
  options: LockOperatorOptions | undefined,
  defaults: AcquireSettings,
  allowed: readonly string[] = OPERATOR_KEYS,
): AcquireSettings {
  if (options === undefined) return defaults;
  // (checked once, by resolveAcquireOptions: this runs for every withLock() a pipeline creates)
  if (typeof options !== 'object' || options === null || !('onBusy' in options)) return resolveAcquireOptions(options, defaults, allowed, 'lock options');
  const { onBusy: given, ...rest } = checkObject(options, 'options', allowed, 'lock options');
  const onBusy = checkOnBusy(given);
  const settings = resolveAcquireOptions(rest, defaults, allowed, 'lock options');
  if (onBusy === 'wait') return settings;
  if (rest.waitTimeout !== undefined && rest.waitTimeout !== 0) {
    throw new LockOptionsError('waitTimeout', "0 or left out with onBusy: 'skip' (it tries once, without waiting)", rest.waitTimeout);
  }
  return { ...settings, waitTimeout: 0, skip: true };
}

/** Checks the options of `withLock`/`using` without a locker at hand (the free operators). */
export function checkOperatorOptions(options: LockOperatorOptions | undefined, allowed: readonly string[] = OPERATOR_KEYS): void {
  resolveOperatorOptions(options, DEFAULT_ACQUIRE, allowed);
}

function checkOnBusy(value: unknown): OnBusy {
  if (value === undefined) return 'wait';
  if (value !== 'wait' && value !== 'skip') throw new LockOptionsError('onBusy', "'wait' or 'skip'", value);
  return value;
}

const DEFAULT_ACQUIRE: AcquireSettings = {
  ttl: DEFAULTS.ttl,
  waitTimeout: DEFAULTS.waitTimeout,
  retry: DEFAULTS.retry,
  renew: { interval: undefined },
  onLost: DEFAULTS.onLost,
  reentrant: DEFAULTS.reentrant,
};

/** Validates a TTL given to `lease.extend()`. */
export function checkExtendTtl(ttl: unknown): number {
  const value = checkMs('ttl', ttl, 1);
  if (leaseValidity(value) <= 0)
    throw new LockOptionsError(
      'ttl',
      `an integer from ${MIN_VALID_TTL} to ${MAX_MS} (ms): shorter leases have no validity left after the clock-drift margin`,
      ttl,
    );
  return value;
}

/** Checks per-call options without a locker at hand (the free `withLock`). */
export function checkAcquireOptions(options: AcquireOptions | undefined, allowed: readonly string[] = ACQUIRE_KEYS): void {
  resolveAcquireOptions(options, DEFAULT_ACQUIRE, allowed);
}

function checkObject<T extends object>(value: T | undefined, option: string, allowed: readonly string[], what: string): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError(option, `an object of ${what}`, value);
  }
  for (const name of Object.keys(value)) {
    if (!allowed.includes(name)) {
      throw new LockOptionsError(`${option}.${name}`, `one of the known ${what}: ${allowed.join(', ')}`, (value as Record<string, unknown>)[name]);
    }
  }
  return value;
}

function checkMs(option: string, value: unknown, min: number, allowInfinity = false): number {
  if (allowInfinity && value === Infinity) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
    const range = `an integer from ${min} to ${MAX_MS} (ms)${allowInfinity ? ', or Infinity' : ''}`;
    throw new LockOptionsError(option, range, value);
  }
  return value;
}

function checkRetry(value: unknown): RetryPolicy {
  if (typeof value === 'function') return value as RetryDelay;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError('retry', '{ minDelay, jitter } or a function (attempt) => ObservableInput', value);
  }
  const r = checkObject(value as Record<string, unknown>, 'retry', RETRY_KEYS, 'retry options');
  const minDelay = r.minDelay === undefined ? DEFAULTS.retry.minDelay : checkMs('retry.minDelay', r.minDelay, 0);
  const jitter = r.jitter === undefined ? DEFAULTS.retry.jitter : checkMs('retry.jitter', r.jitter, 0);
  if (minDelay + jitter > MAX_MS) {
    throw new LockOptionsError('retry.jitter', `an integer from 0 to ${MAX_MS - minDelay} (ms), so that minDelay + jitter stays within ${MAX_MS}`, jitter);
  }
  return { minDelay, jitter };
}

/** The shortest TTL with time left after the drift margin for one renewal interval of 1 ms. */
const MIN_RENEWED_TTL = 4;
/** The shortest TTL with any validity left after the drift margin. */
const MIN_VALID_TTL = 3;

function checkRenew(value: unknown): AcquireSettings['renew'] {
  if (value === false) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError('renew', 'false or { interval } (interval in ms)', value);
  }
  const r = checkObject(value as Record<string, unknown>, 'renew', RENEW_KEYS, 'renew options');
  return { interval: r.interval === undefined ? undefined : checkMs('renew.interval', r.interval, 1) };
}

/** A renewed lease must have room for its interval within its validity. */
function checkRenewFits(ttl: number, renew: AcquireSettings['renew']): void {
  if (renew === false) return;
  const validity = leaseValidity(ttl);
  if (ttl < MIN_RENEWED_TTL) {
    throw new LockOptionsError('ttl', `an integer from ${MIN_RENEWED_TTL} to ${MAX_MS} (ms) while renewal is on (with renew: false, from 1)`, ttl);
  }
  if (renew.interval !== undefined && renew.interval >= validity) {
    const max = Math.ceil(validity) - 1;
    throw new LockOptionsError(
      'renew.interval',
      `an integer from 1 to ${max} (ms): below the validity of a ${ttl} ms lease (ttl − ttl·1% − 2 ms)`,
      renew.interval,
    );
  }
}

const COHORT_KEYS = ['maxPasses', 'maxMs', 'roundMs', 'batchMs'] as const;

function checkCohort(value: unknown): LockerSettings['cohort'] {
  if (value === undefined) return DEFAULTS.cohort;
  if (value === false) return { maxPasses: 0, maxMs: 0, roundMs: 0, batchMs: 0 };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError('cohort', 'false or { maxPasses, maxMs, roundMs, batchMs }', value);
  }
  const c = checkObject(value as Record<string, unknown>, 'cohort', COHORT_KEYS, 'cohort options');
  const maxPasses = c.maxPasses === undefined ? DEFAULTS.cohort.maxPasses : c.maxPasses;
  if (typeof maxPasses !== 'number' || !Number.isInteger(maxPasses) || maxPasses < 0 || maxPasses > MAX_PASSES) {
    throw new LockOptionsError('cohort.maxPasses', `an integer from 0 to ${MAX_PASSES}`, maxPasses);
  }
  const maxMs = c.maxMs === undefined ? DEFAULTS.cohort.maxMs : checkMs('cohort.maxMs', c.maxMs, 0);
  const roundMs = c.roundMs === undefined ? DEFAULTS.cohort.roundMs : checkMs('cohort.roundMs', c.roundMs, 0);
  const batchMs = c.batchMs === undefined ? DEFAULTS.cohort.batchMs : checkMs('cohort.batchMs', c.batchMs, 0);
  return { maxPasses, maxMs, roundMs, batchMs };
}

function checkBoolean(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new LockOptionsError(option, 'true or false', value);
  return value;
}

function checkOnLost(value: unknown): OnLost {
  if (value !== 'error' && value !== 'notify') throw new LockOptionsError('onLost', "'error' or 'notify'", value);
  return value;
}

function checkStore(store: unknown): LockStore {
  const s = store as Partial<LockStore> | null;
  if (typeof s !== 'object' || s === null || typeof s.tryAcquire !== 'function' || typeof s.release !== 'function' || typeof s.extend !== 'function') {
    throw new LockOptionsError('store', 'a LockStore (an object with tryAcquire, release and extend)', store);
  }
  return s as LockStore;
}
