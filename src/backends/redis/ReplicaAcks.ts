/**
 * Replica acknowledgement of grants, the Redis store's `replicaAcks` option: a grant counts only
 * once enough replicas have acknowledged it (Redis `WAIT`), else the key is given back and the
 * acquisition fails with `ReplicaAckError`.
 *
 * `WAIT` counts the replicas that acknowledged the writes *of the connection it is sent on* (up to
 * that connection's last propagated write). So it must follow the grant on the same connection,
 * and a grant this connection did not write itself (a release by another client handed the key
 * over) must first be covered by a write of ours. Hence:
 * - it is sent once the script that granted the key has answered, never pipelined with it: ioredis
 *   re-sends a script the server lost (NOSCRIPT) only after that answer, so a pipelined `WAIT`
 *   could run before the grant's write;
 * - a key found already handed over (by a later attempt, or by `leave`) is first "touched": an
 *   owner-checked write of the TTL it has left (the extend script's PEXPIRE; for permits of a
 *   shared lock, extendShared with one ms more, so that its ZADD changes the score: Redis does not
 *   propagate a ZADD that changes nothing, and `WAIT` would then count an older write). The
 *   touch is what `WAIT`'s documented contract needs ("the previous write commands sent in the
 *   context of the current connection"); Redis 7.0 happens to record the replication offset after
 *   every command of a connection, reads included, so there a `WAIT` after the granting script
 *   also covers the other connection's hand-off, and no test on it can tell the touch is missing
 *   (the hand mutants of mutation/hand/redisLockStore-acks.txt that drop it survive for that reason);
 * - a connection that closed between the grant's call and `WAIT`'s answer voids the answer (a
 *   `WAIT` on a new connection counts nothing of ours and answers at once): the grant is given
 *   back as if unacknowledged;
 * - grants share `WAIT`s: `WAIT` blocks the whole connection (every command behind it, renewals of
 *   other leases included) for up to `timeout`, so one `WAIT` per grant would block it for
 *   `timeout` × the grants of a burst while replicas lag, and leases renewed on it would be lost.
 *   A `WAIT` covers every write the connection made before it was sent: a grant answered while
 *   none is in flight sends one; grants answered while one is in flight (it may have been sent
 *   before their writes ran) all share the next one, sent when it answers. A burst costs at most
 *   two `WAIT`s, and a grant waits for at most two.
 */
import { LockOptionsError, ReplicaAckError, type StoreOperation } from '../../errors/errors.js';
import { MAX_MS } from '../../options/limits.js';
import type { ExtendOutcome } from '../../store/LockStore.js';
import type { RedisClient } from './RedisClient.js';

/**
 * The `replicaAcks` option of the Redis store: how many replicas must acknowledge a grant, and
 * how long to wait for them.
 *
 * @example
 * ```ts
 * // a grant counts once 1 replica has it, waiting at most 50 ms for it
 * const store = new RedisLockStore(redis, { replicaAcks: { replicas: 1, timeout: 50 } });
 * ```
 */
export interface ReplicaAcksOptions {
  /** How many replicas must acknowledge each grant: an integer from 1 to 2147483647. */
  readonly replicas: number;
  /**
   * How long to wait for them, in ms: an integer from 1 to 2147483647 (`WAIT`'s 0, "forever", is
   * refused). Keep it well below the locker's `commandTimeout` (default 2000), which bounds the
   * whole acquire call: an acquisition that times out first fails with a plain `LockStoreError`,
   * and a grant acknowledged later is given back.
   */
  readonly timeout: number;
}

/** Checks the `replicaAcks` option for `client`; `undefined` when it is not set. */
export function checkReplicaAcks(value: unknown, client: RedisClient): ReplicaAcksOptions | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new LockOptionsError('replicaAcks', 'an object { replicas, timeout }', value);
  const { replicas, timeout, ...unknown } = value as Record<string, unknown>;
  const extra = Object.keys(unknown)[0];
  if (extra !== undefined) throw new LockOptionsError(`replicaAcks.${extra}`, 'one of replicas, timeout', unknown[extra]);
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1 || replicas > MAX_MS) {
    throw new LockOptionsError('replicaAcks.replicas', `an integer from 1 to ${MAX_MS} (replicas)`, replicas);
  }
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_MS) {
    throw new LockOptionsError('replicaAcks.timeout', `an integer from 1 to ${MAX_MS} (ms)`, timeout);
  }
  if (client.isCluster === true) {
    // WAIT must reach the connection that wrote the grant, the key's master; ioredis Cluster sends
    // a keyless command to any node.
    throw new LockOptionsError(
      'replicaAcks',
      'no replicaAcks with a Cluster client (WAIT counts the writes of the connection it is sent on, and ioredis Cluster sends a keyless WAIT to any node, not to the master that granted the key)',
      value,
    );
  }
  if (typeof client.wait !== 'function' || typeof client.on !== 'function' || typeof client.off !== 'function') {
    throw new LockOptionsError('replicaAcks', 'a client with WAIT and connection events (an ioredis Redis, direct or through Sentinel)', value);
  }
  return { replicas, timeout };
}

/**
 * How a grant reached this connection: written by the call sent at `epoch`, or found handed over
 * (`touch`: an owner-checked write that replicates, keeping the grant's TTL or lengthening it a
 * little).
 */
export type GrantWrite = { readonly epoch: number } | { readonly touch: () => Promise<ExtendOutcome> };

/** Confirms grants on one client's connection (see the module comment). */
export class ReplicaAcks {
  /** Closes of the client's connection so far. */
  private closes = 0;
  /** The `WAIT` sent last, until it answers. */
  private inFlight: Promise<number> | undefined;
  /** The `WAIT` to send once `inFlight` answers, shared by the grants answered meanwhile. */
  private queued: Promise<number> | undefined;
  private readonly onClose = (): void => {
    this.closes++;
  };

  constructor(
    private readonly client: RedisClient,
    readonly options: ReplicaAcksOptions,
  ) {
    client.on!('close', this.onClose);
  }

  /** The connection as of now, for a grant's call about to be sent (compare at `WAIT`'s answer). */
  get epoch(): number {
    return this.closes;
  }

  /**
   * Resolves once `options.replicas` replicas acknowledged the grant of `key` (its write, or `write.touch`'s).
   * Otherwise gives the key back (`giveBack`, awaited, its failure ignored: the key then lapses
   * with its TTL) and rejects: `ReplicaAckError` when too few acknowledged, the failure itself
   * when a call failed or the connection changed.
   */
  async confirm(key: string, operation: StoreOperation, write: GrantWrite, giveBack: () => Promise<unknown>): Promise<void> {
    const { replicas, timeout } = this.options;
    try {
      let epoch: number;
      if ('epoch' in write) epoch = write.epoch;
      else {
        epoch = this.closes;
        const touched = await write.touch();
        if (touched !== 'extended') throw new Error(`the key handed over was ${touched} before its replication could be confirmed`);
      }
      const acknowledged = await this.covering();
      if (this.closes !== epoch) throw new Error('the connection closed between the grant and WAIT: its replication cannot be confirmed');
      if (acknowledged < replicas) throw new ReplicaAckError(key, operation, acknowledged, replicas, timeout);
    } catch (error) {
      await giveBack().catch(() => undefined);
      throw error;
    }
  }

  /** A `WAIT` sent after this call (so it covers the writes answered before it), shared (see the module comment). */
  private covering(): Promise<number> {
    const inFlight = this.inFlight;
    if (inFlight === undefined) return this.sendWait();
    const settled = (): Promise<number> => {
      this.queued = undefined;
      return this.sendWait();
    };
    return (this.queued ??= inFlight.then(settled, settled));
  }

  private sendWait(): Promise<number> {
    const wait = this.client.wait!(this.options.replicas, this.options.timeout);
    this.inFlight = wait;
    const done = (): void => {
      if (this.inFlight === wait) this.inFlight = undefined;
    };
    wait.then(done, done);
    return wait;
  }

  /** Stops listening to the client. */
  close(): void {
    this.client.off!('close', this.onClose);
  }
}
