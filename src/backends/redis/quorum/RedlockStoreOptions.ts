/**
 * The options of the quorum store ({@link RedlockStore}) and their checks: what may be passed, the
 * defaults, and the LockOptionsError that names an option and its allowed range.
 */
import { LockOptionsError } from '../../../errors/errors.js';
import { MAX_MS } from '../../../options/limits.js';

/**
 * Options of `RedlockStore`: how long a node may take, the clock-drift margin of its validity, and
 * hints to waiters.
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { RedlockStore, type RedlockStoreOptions } from 'rxjs-lock/redis';
 *
 * const options: RedlockStoreOptions = { nodeTimeout: 50, driftFactor: 0.01, drift: 2 };
 * const nodes = [6380, 6381, 6382].map((port) => new Redis(port, '127.0.0.1'));
 * const store = new RedlockStore(nodes, options);
 * ```
 */
export interface RedlockStoreOptions {
  /**
   * How long one node may take to answer one call, in ms (an integer from 1 to 2147483647). A node
   * that has not answered by then counts as failed for that call, so a frozen or unreachable node
   * costs each call this long at most, not the locker's `commandTimeout`. An acquisition is up to two
   * rounds (the grant, then the fence raise when the nodes' fences disagree), and a failed one a
   * third (the release), so keep
   * `3 × nodeTimeout` well below the locker's `commandTimeout` (2,000 ms by default) and far below
   * the lock's `ttl`.
   *
   * 100 ms by default: a round trip to a Redis on the same network takes well under 1 ms, and a
   * busy Node.js process can delay reading an answer by tens of milliseconds (a GC pause, a long
   * task), which must not count as a failed node; yet a frozen node must not hold an acquisition
   * for long. The Redlock description suggests 5–50 ms for a 10 s TTL; 100 ms leaves room for a
   * loaded client while keeping a frozen node's cost to a fraction of any usable TTL.
   * @default 100
   * @example
   * ```ts
   * new RedlockStore([a, b, c], { nodeTimeout: 50 });
   * ```
   */
  nodeTimeout?: number;
  /**
   * The share of the TTL kept as a margin for the nodes' clocks running at different rates (a
   * number from 0 to less than 1). The lock's validity is `ttl − elapsed − (ttl × driftFactor +
   * drift)`.
   * @default 0.01
   * @example
   * ```ts
   * new RedlockStore([a, b, c], { driftFactor: 0.02, drift: 5 });
   * ```
   */
  driftFactor?: number;
  /**
   * A fixed margin added to the drift, in ms (a number from 0 to 2147483647): timer and clock
   * resolution on the nodes and here.
   * @default 2
   * @example
   * ```ts
   * new RedlockStore([a, b, c], { drift: 5 });
   * ```
   */
  drift?: number;
  /**
   * Hint the next waiter when a busy key is given back. A quorum store has no line: waiters poll,
   * each at its retry policy's pace. With this on, an acquisition that a node refused notes there
   * where it listens (one pub/sub channel per store, subscribed on a connection to each node that
   * the store opens with `duplicate()` on the first wait and closes 2 s after the last); when the
   * holder gives the key back, each node tells the acquisition it refused last (within 2 s) that
   * the key is free, and it asks at once instead of at the end of its back-off step. A hint only:
   * whoever asks first takes the key, and a lost hint costs one back-off step. The release reads
   * the note with the key, in one MGET: an uncontended pair costs nothing more.
   * @default true
   * @example
   * ```ts
   * new RedlockStore([a, b, c], { wakeUp: false }); // poll only, open no connection of its own
   * ```
   */
  wakeUp?: boolean;
  /**
   * Send the calls to a node made in one tick after the first together (up to 16 per write), as
   * `RedisLockStore`'s option of the same name does on each node's connection: a process taking
   * many locks at once pays a system call per batch, not per command. Order kept; a lone call goes
   * out at once.
   * @default true
   * @example
   * ```ts
   * new RedlockStore([a, b, c], { coalesceWrites: false }); // one write per call
   * ```
   */
  coalesceWrites?: boolean;
}

/** The options with their defaults applied. */
export interface RedlockSettings {
  readonly nodeTimeout: number;
  readonly driftFactor: number;
  readonly drift: number;
  readonly wakeUp: boolean;
  readonly coalesceWrites: boolean;
}

export const REDLOCK_DEFAULTS: RedlockSettings = Object.freeze({ nodeTimeout: 100, driftFactor: 0.01, drift: 2, wakeUp: true, coalesceWrites: true });

const OPTION_NAMES = 'nodeTimeout, driftFactor, drift, wakeUp, coalesceWrites';

/** Checks `options` and applies the defaults; throws LockOptionsError naming what is wrong. */
export function resolveRedlockOptions(options: unknown): RedlockSettings {
  if (options === undefined) return REDLOCK_DEFAULTS;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('options', `an object of RedlockStore options (${OPTION_NAMES})`, options);
  }
  const {
    nodeTimeout = REDLOCK_DEFAULTS.nodeTimeout,
    driftFactor = REDLOCK_DEFAULTS.driftFactor,
    drift = REDLOCK_DEFAULTS.drift,
    wakeUp = REDLOCK_DEFAULTS.wakeUp,
    coalesceWrites = REDLOCK_DEFAULTS.coalesceWrites,
    ...unknown
  } = options as RedlockStoreOptions;
  const extra = Object.keys(unknown)[0];
  if (extra !== undefined)
    throw new LockOptionsError(`options.${extra}`, `one of the known RedlockStore options: ${OPTION_NAMES}`, (unknown as Record<string, unknown>)[extra]);
  if (!Number.isInteger(nodeTimeout) || nodeTimeout < 1 || nodeTimeout > MAX_MS)
    throw new LockOptionsError('nodeTimeout', `an integer from 1 to ${MAX_MS} (ms)`, nodeTimeout);
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 1))
    throw new LockOptionsError('driftFactor', 'a number from 0 to less than 1', driftFactor);
  if (typeof drift !== 'number' || !(drift >= 0 && drift <= MAX_MS)) throw new LockOptionsError('drift', `a number from 0 to ${MAX_MS} (ms)`, drift);
  if (typeof wakeUp !== 'boolean') throw new LockOptionsError('wakeUp', 'true or false', wakeUp);
  if (typeof coalesceWrites !== 'boolean') throw new LockOptionsError('coalesceWrites', 'true or false', coalesceWrites);
  return { nodeTimeout, driftFactor, drift, wakeUp, coalesceWrites };
}
