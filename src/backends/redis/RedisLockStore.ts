/**
 * The Redis backend: the store operations on one Redis (or a Redis Cluster, where every script
 * touches the keys of one hash slot). Acquire, release and extend are owner-checked Lua scripts
 * (see ./protocol), registered on the client and called by SHA; acquire also issues the fencing
 * tokens. Waiters queue in Redis, and a release hands the key straight to the first of them and
 * wakes it by pub/sub.
 */
import { v4 as uuidv4 } from 'uuid';
import { asError, LockOptionsError } from '../../errors/errors.js';
import { MAX_MS } from '../../options/limits.js';
import { fenceCountError, isFenceCount, isStoreTtl, sharedAcquireError, storeTtlError } from '../../options/storeArguments.js';
import type {
  BatchExtendStore,
  ClosableStore,
  ExtendRequest,
  InspectableStore,
  KeyCheckingStore,
  LeaveResult,
  LockInfo,
  QueueingStore,
  StoreWatch,
  WakeSignal,
} from '../../store/capabilities.js';
import type { Acquired, AcquireResult, ExtendOutcome, LockStore, ReleasedGrant } from '../../store/LockStore.js';
import type { BatchExtendSharedStore, InspectableSharedStore, SharedLockInfo, SharedLockStore, SharedPlace } from '../../store/SharedLockStore.js';
import {
  acquireArgs,
  decodeAcquire,
  decodeAcquireShared,
  decodeExtend,
  decodeInboxMessage,
  decodeLeave,
  decodeRelease,
  releaseArgs,
} from './protocol/codec.js';
import { defineCommands, queueScript, runScript, type ScriptName } from './protocol/commands.js';
import { holdWritesForTick } from './protocol/tickWrites.js';
import { masterConnectionOf } from './protocol/clusterConnection.js';
import { inspectLock } from './inspection.js';
import { inspectSharedLock } from './sharedInspection.js';
import { checkLockKey, hashTag, isReserved, LockKeysCache, RESERVED_PREFIX, reservedKeyError, sharedKeys, type LockKeys } from './protocol/keyLayout.js';
import { groupByNode } from './protocol/nodeGroups.js';
import type { RedisClient, RedisPipeline, RedisSubscriber } from './RedisClient.js';
import { checkReplicaAcks, ReplicaAcks, type GrantWrite, type ReplicaAcksOptions } from './ReplicaAcks.js';
import { ShardedWake, supportsShardedWake } from './ShardedWake.js';
import { WakeInbox, type InboxWatch } from './WakeInbox.js';

/** Prefix of the stores' inbox channels (see ./WakeInbox.ts). */
export const INBOX_PREFIX = 'rxjs-lock:inbox:';

/**
 * Options of {@link RedisLockStore}.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { RedisLockStore, type RedisLockStoreOptions } from 'rxjs-lock/redis';
 *
 * const redis = new Redis();
 * const options: RedisLockStoreOptions = { subscriber: redis.duplicate(), placeTtl: 5_000 };
 * const locker = createLocker({ store: new RedisLockStore(redis, options) });
 * ```
 */
export interface RedisLockStoreOptions {
  /**
   * Wake waiters by pub/sub when a release hands them the key. Turn it off for a Redis without
   * pub/sub (some managed services): waiters then find their grant by polling.
   * @default true
   */
  wakeUp?: boolean;
  /**
   * The connection that receives wake-up signals. It is put in subscriber mode, so it cannot be
   * the client used for commands. On a Cluster, giving one keeps wake-ups on the broadcast inbox
   * (`PUBLISH`, relayed to every node) instead of sharded pub/sub.
   * @default client.duplicate(), opened on the first wait and closed when no key is watched (on a
   * Cluster that offers it, a duplicate with `shardedSubscribers: true`)
   */
  subscriber?: RedisSubscriber;
  /**
   * How long a waiter's place in line lasts without being renewed, in ms (an integer from 100 to
   * 2147483647). A waiter renews it with every attempt; one that died loses it after this long,
   * and a key handed to it meanwhile lapses when its place would have (or after the waiter's own
   * `ttl`, if that comes first). Waiters that are woken by pub/sub poll only every third of this.
   * @default 3000
   */
  placeTtl?: number;
  /**
   * How long the store's inbox channel stays subscribed after its last waiter left, in ms (an
   * integer from 0 to 2147483647), so a process that keeps waiting is not subscribed and
   * unsubscribed for every wait. Then the subscriber connection is closed.
   * @default 2000
   */
  lingerMs?: number;
  /**
   * Count a grant only once this many replicas acknowledged it within `timeout` ms (Redis `WAIT`,
   * sent on the client's connection right after the grant). If fewer did, the store gives the key
   * back and the acquisition fails with `ReplicaAckError` (not retried, like any store failure).
   * Every way to a grant honours it: `tryAcquire`, `tryAcquireInLine` (a key handed over by a
   * release included: it is first re-written by this connection, so that `WAIT` covers it), and a
   * `leave` that finds the key handed over; a hand-off announced by pub/sub makes the waiter ask
   * the store rather than take the signal's word.
   *
   * It narrows the window in which a failover loses a fresh grant (the master dies before any
   * replica has the key, a replica is promoted, and a second client gets the same lock): it does
   * not close it. `WAIT` is not a consensus: a replica that acknowledged may still not be the one
   * promoted, the lease's later renewals are not waited for, and a replica restarted without
   * persistence forgets. Keep fencing tokens for correctness (`FencedResource`).
   *
   * Costs: a round trip per grant (two for a key found handed over), and `WAIT` blocks the client's
   * connection — every other command of that client — for up to `timeout` while replicas lag;
   * give the store a client of its own if that matters. Refused on a Cluster client
   * (`LockOptionsError`): ioredis sends a keyless `WAIT` to any node, not to the master that
   * granted the key. Works through Sentinel (`new Redis({ sentinels, name })`).
   * @default undefined (grants count at once, replicated asynchronously)
   * @example
   * ```ts
   * const store = new RedisLockStore(redis, { replicaAcks: { replicas: 1, timeout: 50 } });
   * ```
   */
  replicaAcks?: ReplicaAcksOptions;
  /**
   * Send the store's calls of one tick together (up to 16 per write): the client's socket holds its writes back
   * (`cork`) until the end of the tick, and Redis reads them together. Where a process takes and
   * gives back many locks at once, this about halves the client's CPU per acquisition (a system
   * call per command, on both sides, was half of it) and needs nothing of the client's options
   * (unlike ioredis' `enableAutoPipelining`, which keeps one batch in flight at a time). The order
   * of commands is kept; a call waits at most for the rest of the tick's code (a process that exits
   * within the tick, by `process.exit()` or a crash, lets them go in its 'exit' event). Every write
   * on that connection in the tick, yours included, leaves with them. On a Cluster, the connection
   * to the master serving each call's key is held.
   * @default true
   * @example
   * ```ts
   * const store = new RedisLockStore(redis, { coalesceWrites: false }); // one write per call
   * ```
   */
  coalesceWrites?: boolean;
}

const OPTION_NAMES = 'wakeUp, subscriber, placeTtl, lingerMs, replicaAcks, coalesceWrites';

/**
 * A lock store on Redis through an ioredis client (`Redis` or `Cluster`, ioredis 5 or 6) that the
 * caller owns (and closes). Redis 7.0 or later.
 *
 * Keys (see ./protocol/keyLayout.ts), all in the lock key's Cluster hash slot: the lock itself is
 * a string key named as the locker names it, holding its owner's token with the lease as its TTL;
 * helper keys under the reserved `rxjs-lock:` namespace hold its fence counter (for a few
 * milliseconds after each grant) and, while anyone waits, the line and its places. Once a lock is
 * released and its TTLs have passed, nothing is left of it. Each store has an inbox channel
 * (`rxjs-lock:inbox:<uuid>`) on which releases announce hand-offs to its waiters. On a Cluster
 * (an ioredis client that offers `shardedSubscribers`, and a store that opens its own subscriber)
 * they are announced instead on a shard channel per key and store, in the key's hash slot
 * (`rxjs-lock:wake:{…}`, `SPUBLISH`), which only the slot's node delivers, where a `PUBLISH` is
 * relayed to every node of the cluster (see ./ShardedWake.ts).
 *
 * Fencing tokens grow from the server's clock (4 per microsecond since 2025) and a counter beside
 * the key, so they keep growing across a restart without persistence, `FLUSHALL`, eviction and a
 * failover to a replica that missed the last writes, provided the server clocks do not go back
 * (see the README's "Running Redis for locks").
 *
 * Fair hand-off: a waiter that finds the key held takes a place in line. A release with waiters in
 * line does not free the key: it hands it to the first live waiter (its fences, a TTL until that
 * waiter's place would have lapsed or its own TTL, whichever is shorter) and publishes the grant
 * to that waiter's inbox; the waiter, woken at once (and alone), renews it to its own TTL. So a hot
 * key goes round the processes in arrival order, with one round trip per release and no polling
 * storm, and a process that just released cannot grab it back ahead of those in line.
 *
 * Store calls are bounded by the locker's `commandTimeout`, not by the client: a paused or
 * unreachable Redis fails the call with `LockStoreError` instead of hanging it. Lease renewals of
 * many leases go out as one pipeline (on a Cluster, one pipeline per node).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLocker } from 'rxjs-lock';
 * import { RedisLockStore } from 'rxjs-lock/redis';
 *
 * const redis = new Redis(6379, '127.0.0.1');
 * const store = new RedisLockStore(redis);
 * const locker = createLocker({ store, ttl: 10_000 });
 * // on shutdown:
 * await locker.close();
 * await store.close(); // the subscriber connection it opened
 * await redis.quit();
 * ```
 */
export class RedisLockStore
  implements
    LockStore,
    QueueingStore,
    BatchExtendStore,
    KeyCheckingStore,
    InspectableStore,
    ClosableStore,
    SharedLockStore,
    InspectableSharedStore,
    BatchExtendSharedStore
{
  private readonly wake: WakeInbox | undefined;
  /** Wake-ups by shard channel, on a Cluster that offers them (else every wait uses `wake`). */
  private readonly sharded: ShardedWake | undefined;
  private readonly placeTtl: number;
  private readonly inbox: string;
  /** The client's own key prefix (ioredis `keyPrefix`), which the key layout must account for. */
  private readonly clientPrefix: string;
  /** Replica acknowledgement of grants, when `replicaAcks` is set. */
  private readonly acks: ReplicaAcks | undefined;
  /** The key layouts of the lock keys used lately (bounded). */
  private readonly layouts: LockKeysCache;
  /** Whether the calls of one tick leave together (`coalesceWrites`). */
  private readonly coalesceWrites: boolean;

  /**
   * @param client The ioredis client (`Redis` or `Cluster`) to run commands on; yours to close.
   * The store registers its scripts on it (`defineCommand`).
   * @param options See {@link RedisLockStoreOptions}.
   */
  constructor(
    private readonly client: RedisClient,
    options: RedisLockStoreOptions = {},
  ) {
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.defineCommand !== 'function' ||
      typeof client.multi !== 'function' ||
      typeof client.pipeline !== 'function'
    ) {
      throw new LockOptionsError('client', 'an ioredis client (a Redis or a Cluster)', client);
    }
    if (typeof options !== 'object' || options === null || Array.isArray(options))
      throw new LockOptionsError('options', `an object of RedisLockStore options (${OPTION_NAMES})`, options);
    const { wakeUp = true, subscriber, placeTtl = 3000, lingerMs = 2000, replicaAcks, coalesceWrites = true, ...unknown } = options;
    const extra = Object.keys(unknown)[0];
    if (extra !== undefined)
      throw new LockOptionsError(`options.${extra}`, `one of the known RedisLockStore options: ${OPTION_NAMES}`, (unknown as Record<string, unknown>)[extra]);
    if (typeof wakeUp !== 'boolean') throw new LockOptionsError('wakeUp', 'true or false', wakeUp);
    if (typeof coalesceWrites !== 'boolean') throw new LockOptionsError('coalesceWrites', 'true or false', coalesceWrites);
    if (!Number.isInteger(placeTtl) || placeTtl < 100 || placeTtl > MAX_MS)
      throw new LockOptionsError('placeTtl', `an integer from 100 to ${MAX_MS} (ms)`, placeTtl);
    if (!Number.isInteger(lingerMs) || lingerMs < 0 || lingerMs > MAX_MS)
      throw new LockOptionsError('lingerMs', `an integer from 0 to ${MAX_MS} (ms)`, lingerMs);
    if (
      subscriber !== undefined &&
      (typeof subscriber !== 'object' || subscriber === null || typeof subscriber.subscribe !== 'function' || typeof subscriber.on !== 'function')
    ) {
      throw new LockOptionsError('subscriber', 'an ioredis connection for pub/sub', subscriber);
    }
    const clientPrefix = client.options?.keyPrefix ?? '';
    if (typeof clientPrefix !== 'string' || ((clientPrefix.includes('{') || clientPrefix.includes('}')) && hashTag(clientPrefix) === undefined)) {
      throw new LockOptionsError('client keyPrefix', 'an ioredis keyPrefix with no "{" or "}", or with a complete {…} hash tag', clientPrefix);
    }
    if (clientPrefix.includes(RESERVED_PREFIX)) {
      throw new LockOptionsError(
        'client keyPrefix',
        `an ioredis keyPrefix that does not contain "${RESERVED_PREFIX}", the store's own namespace`,
        clientPrefix,
      );
    }
    const acks = checkReplicaAcks(replicaAcks, client);
    this.clientPrefix = clientPrefix;
    this.layouts = new LockKeysCache(clientPrefix);
    this.placeTtl = placeTtl;
    this.coalesceWrites = coalesceWrites;
    this.inbox = INBOX_PREFIX + uuidv4();
    defineCommands(client);
    this.acks = acks === undefined ? undefined : new ReplicaAcks(client, acks);
    if (wakeUp) {
      if (subscriber !== undefined) this.wake = new WakeInbox(this.inbox, () => subscriber, lingerMs, false);
      // The inbox subscribes again by itself when its connection comes back (WakeInbox, on 'ready',
      // with the answer handled). ioredis' own re-subscription drops its promise: a connection
      // closed before Redis answers it (the store closed, a frozen Redis) leaves an unhandled
      // rejection, which ends a Node process by default (seen in attackFuzz.test.ts). So the
      // connection the store makes for itself has it off; a Cluster re-subscribes on its own
      // terms and is duplicated as it is.
      else if (typeof client.duplicate === 'function') {
        // (a Redis takes override options; the type says a Cluster's signature, start-up nodes first)
        const duplicate = client.duplicate.bind(client) as (override?: { autoResubscribe: boolean }) => RedisSubscriber;
        this.wake = new WakeInbox(this.inbox, () => (client.isCluster === true ? duplicate() : duplicate({ autoResubscribe: false })), lingerMs, true);
        if (supportsShardedWake(client)) this.sharded = new ShardedWake(client, this.inbox.slice(INBOX_PREFIX.length), clientPrefix, lingerMs);
      }
    }
  }

  /** Runs script `name` on the client, its write held to the end of the tick (`coalesceWrites`). */
  private run(name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    if (this.coalesceWrites) this.holdWrites(keys[0]!);
    return runScript(this.client, name, keys, args);
  }

  /**
   * Holds the writes of the rest of this tick on the connection a call on `key` goes to: the
   * client's, or on a Cluster the connection to the master serving the key's slot.
   */
  private holdWrites(key: string): void {
    if (this.client.isCluster !== true) holdWritesForTick(this.client);
    else {
      const connection = masterConnectionOf(this.client, this.clientPrefix + key);
      if (connection !== undefined) holdWritesForTick(connection);
    }
  }

  tryAcquire(key: string, token: string, ttlMs: number, fences = 1): Promise<AcquireResult> {
    // (The locker checks every key once, with checkKey; a caller using the store directly must not
    // reach the helper keys of another lock either.)
    if (isReserved(key, this.clientPrefix)) return Promise.reject(reservedKeyError(key));
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    if (!isFenceCount(fences)) return Promise.reject(fenceCountError(fences));
    const epoch = this.acks?.epoch ?? 0;
    return this.run('acquire', this.keysOf(key), acquireArgs(token, ttlMs, fences)).then((reply) => this.granted(key, token, reply, ttlMs, epoch));
  }

  tryAcquireInLine(key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave'): Promise<AcquireResult> {
    if (isReserved(key, this.clientPrefix)) return Promise.reject(reservedKeyError(key));
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    if (!isFenceCount(fences)) return Promise.reject(fenceCountError(fences));
    const args = acquireArgs(token, ttlMs, fences, { placeTtl: this.placeTtl, place, inbox: this.inboxOf(key) });
    const epoch = this.acks?.epoch ?? 0;
    return this.run('acquire', this.keysOf(key), args).then((reply) => this.granted(key, token, reply, ttlMs, epoch));
  }

  /**
   * The acquire script's answer; with `replicaAcks`, a grant only once replicas acknowledged it.
   * A bare fence is the common path, a SET by this very call; any other grant may be a key a
   * release handed over (written by another connection), so it is touched first.
   */
  private granted(key: string, token: string, reply: unknown, ttlMs: number, epoch: number): AcquireResult | Promise<AcquireResult> {
    const result = decodeAcquire(reply, ttlMs, this.placeTtl);
    const acks = this.acks;
    if (acks === undefined || !result.acquired) return result;
    const write: GrantWrite = typeof reply === 'number' ? { epoch } : { touch: () => this.extend(key, token, Math.max(1, (result as Acquired).ttl ?? ttlMs)) };
    return acks.confirm(key, 'acquire', write, () => this.release(key, token)).then(() => result);
  }

  release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
    return this.run('release', this.keysOf(key), releaseArgs(token, grant, performance.now())).then(decodeRelease);
  }

  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    // (PEXPIRE 0 would delete the key without the release that records its fences; the script
    // refuses it too, for a caller of another version.)
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    return this.run('extend', [key], [token, ttlMs]).then(decodeExtend);
  }

  /**
   * Leaves the line with plain commands in one transaction, never a script: a script call that
   * meets an emptied script cache is sent again after the NOSCRIPT answer, by which time another
   * client's release may have handed the key to a waiter that already left.
   */
  async leave(key: string, token: string): Promise<LeaveResult> {
    const [lock, , line, places] = this.keysOf(key);
    if (this.coalesceWrites) this.holdWrites(lock);
    const replies = await this.client.multi().zrem(line, token).hdel(places, `w:${token}`).get(lock).hget(places, 'grant').pttl(lock).exec();
    const left = decodeLeave(replies, token);
    if (left.granted && !Number.isSafeInteger(left.fence)) {
      // Ours, but with no record of the hand-off's fences: it cannot be held safely, give it back.
      await this.release(key, token);
      return { granted: false };
    }
    if (left.granted && this.acks !== undefined) {
      const touch = () => this.extend(key, token, Math.max(1, left.ttl));
      await this.acks.confirm(key, 'leave', { touch }, () => this.release(key, token));
    }
    return left;
  }

  /**
   * Extends many leases in one pipeline (one round trip); ioredis re-sends a script the server
   * lost (NOSCRIPT) by its source. On a Cluster, one pipeline per node (ioredis sends a pipeline to
   * one node): leases are grouped by the nodes serving their slots. A lease answered with a
   * redirection or a cluster state error (`MOVED`/`ASK` when its slot is migrating or has moved,
   * `TRYAGAIN`, `CLUSTERDOWN`) is extended again with its own call, which ioredis follows to the
   * right node; a group whose pipeline fails as a whole (the slot table changed under it) is sent
   * lease by lease. Extending is idempotent, so a retry cannot change an outcome; whatever still
   * fails is that lease's error.
   */
  async extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    return this.extendInBatches(
      requests,
      (r) => this.extend(r.key, r.token, r.ttlMs),
      (pipeline, r) => queueScript(pipeline, 'extend', [r.key], [r.token, r.ttlMs]),
      decodeExtend,
    );
  }

  /**
   * {@link BatchExtendSharedStore.extendSharedMany}: as {@link RedisLockStore.extendMany}, one
   * pipeline of `extendShared` scripts (one per node on a Cluster: a shared lock's keys share its
   * key's slot), each holder's outcome or error in order.
   */
  async extendSharedMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    for (const r of requests) if (!isStoreTtl(r.ttlMs)) throw storeTtlError(r.ttlMs);
    return this.extendInBatches(
      requests,
      (r) => this.extendShared(r.key, r.token, r.ttlMs),
      (pipeline, r) => queueScript(pipeline, 'extendShared', this.sharedKeysOf(r.key).slice(0, 2), [r.token, r.ttlMs]),
      (reply) => (reply === 1 ? 'extended' : 'gone'),
    );
  }

  /**
   * Extends `requests` in as few round trips as the client allows: one pipeline (`queue` adds a
   * request to it, `decode` reads its reply), or on a Cluster one per node, a request answered
   * MOVED/ASK sent again alone (`alone`) so ioredis follows the redirection. Whatever fails is that
   * request's error.
   */
  private async extendInBatches(
    requests: readonly ExtendRequest[],
    alone: (request: ExtendRequest) => Promise<ExtendOutcome>,
    queue: (pipeline: RedisPipeline, request: ExtendRequest) => void,
    decode: (reply: unknown) => ExtendOutcome,
  ): Promise<Array<ExtendOutcome | Error>> {
    const client = this.client;
    const one = (r: ExtendRequest) => alone(r).catch(asError);
    if (requests.length === 1) return [await one(requests[0]!)];
    const inPipeline = async (items: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> => {
      const pipeline = client.pipeline();
      for (const r of items) queue(pipeline, r);
      if (this.coalesceWrites) holdWritesForTick(client);
      const replies = await pipeline.exec();
      if (replies === null) throw new Error('the pipeline was discarded');
      return replies.map(([error, reply]) => error ?? decode(reply));
    };
    if (client.isCluster !== true) return inPipeline(requests);
    const slots = client.slots;
    if (slots === undefined || slots.length === 0) return Promise.all(requests.map(one));
    const outcomes = new Array<ExtendOutcome | Error>(requests.length);
    await Promise.all(
      groupByNode(requests, (r) => r.key, slots, this.clientPrefix).map(async (group) => {
        const items = group.map(({ item }) => item);
        const answers = items.length === 1 ? [await one(items[0]!)] : await inPipeline(items).catch(() => Promise.all(items.map(one)));
        await Promise.all(
          group.map(async ({ item, index }, i) => {
            const answer = answers[i]!;
            outcomes[index] = answer instanceof Error && isClusterRedirection(answer) ? await one(item) : answer;
          }),
        );
      }),
    );
    return outcomes;
  }

  /**
   * Hand-offs to `token` (queued for `key`), by pub/sub to this store's inbox, or on a Cluster
   * with sharded subscribers to the key's shard channel: the store's `WakeUpStore` capability,
   * absent when wake-up is off.
   */
  get watch(): ((key: string, token: string, listener: (signal: WakeSignal) => void) => StoreWatch) | undefined {
    const wake = this.wake;
    if (wake === undefined) return undefined;
    return (key, token, listener) =>
      this.watchChannel(key, token, {
        message: (message) => {
          const decoded = decodeInboxMessage(message);
          if (decoded === undefined || decoded.token !== token) return;
          // (With replicaAcks a hand-off is taken only through a call that confirms it: a signal
          // with no date makes the waiter ask the store at once.)
          if (decoded.kind === 'granted')
            listener({
              type: 'granted',
              token,
              fence: decoded.fence,
              fences: decoded.fences,
              waiting: decoded.waiting,
              at: this.acks === undefined ? decoded.at : undefined,
            });
          else listener({ type: 'behind', token, ttl: decoded.ttl });
        },
        status: (active) => listener({ type: active ? 'resumed' : 'interrupted' }),
      });
  }

  checkKey(key: string): void {
    checkLockKey(key, this.clientPrefix);
  }

  // ─── shared locks (semaphores, read-write locks): ./protocol/lua/lib/shared.lua ──────────────

  /**
   * {@link SharedLockStore.tryAcquireShared}: one script over the lock's five shared keys (holders by
   * expiry, their weights, the line, the places, the fence counter), in its hash slot. A grant made
   * to a waiter by another caller's release is announced on the waiter's inbox (`watch`).
   */
  tryAcquireShared(key: string, token: string, ttlMs: number, weight: number, capacity: number, place: SharedPlace, fences = 1): Promise<AcquireResult> {
    if (isReserved(key, this.clientPrefix)) return Promise.reject(reservedKeyError(key));
    const bad = sharedAcquireError(ttlMs, weight, capacity, fences);
    if (bad !== undefined) return Promise.reject(bad);
    const args: Array<string | number> = [token, ttlMs, weight, capacity, this.placeTtl, place === 'leave' ? 'leave' : 'keep', this.inboxOf(key)];
    // (one fence, the script's default, is not sent: most acquisitions reserve no more)
    if (fences > 1) args.push(fences);
    const epoch = this.acks?.epoch ?? 0;
    return this.run('acquireShared', this.sharedKeysOf(key), args).then((reply) => this.grantedShared(key, token, reply, ttlMs, epoch));
  }

  /**
   * The acquireShared script's answer; with `replicaAcks`, permits only once replicas acknowledged
   * their grant, as for a mutex ({@link RedisLockStore.granted}): a grant this very call wrote
   * (the script says so) is covered by `WAIT`; any other (granted from the line by another
   * client's release or leave, or announced by pub/sub and asked for) is touched first.
   */
  private grantedShared(key: string, token: string, reply: unknown, ttlMs: number, epoch: number): AcquireResult | Promise<AcquireResult> {
    const result = decodeAcquireShared(reply, ttlMs, this.placeTtl);
    const acks = this.acks;
    if (acks === undefined || !result.acquired) return result;
    const left = result.ttl ?? ttlMs;
    // (one ms more than it has left, so that the touch changes the lease's end and replicates)
    const write: GrantWrite = (reply as unknown[])[4] === 1 ? { epoch } : { touch: () => this.extendShared(key, token, Math.max(1, left) + 1) };
    return acks.confirm(key, 'acquire', write, () => this.releaseShared(key, token)).then(() => result);
  }

  extendShared(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    return this.run('extendShared', this.sharedKeysOf(key).slice(0, 2), [token, ttlMs]).then((reply) => (reply === 1 ? 'extended' : 'gone'));
  }

  releaseShared(key: string, token: string): Promise<boolean> {
    return this.run('releaseShared', this.sharedKeysOf(key), [token]).then((reply) => reply === 1);
  }

  leaveShared(key: string, token: string): Promise<boolean> {
    return this.run('leaveShared', this.sharedKeysOf(key), [token]).then((reply) => reply === 1);
  }

  /**
   * {@link InspectableSharedStore.inspectShared}: the live holders (token, permits, fence, TTL) and
   * waiters of the shared lock `key`, or `null` when it has neither — one MULTI of read commands
   * (see ./sharedInspection.ts), nothing swept, granted or refreshed.
   */
  inspectShared(key: string): Promise<SharedLockInfo | null> {
    if (isReserved(key, this.clientPrefix)) return Promise.reject(reservedKeyError(key));
    return inspectSharedLock(this.client, sharedKeys(key, this.clientPrefix));
  }

  private sharedKeysOf(key: string): readonly string[] {
    return sharedKeys(key, this.clientPrefix);
  }

  /**
   * The holder of `key` (token, remaining TTL, waiters in line whose places have not lapsed), or
   * `null` when it is free: one MULTI of read commands (see ./inspection.ts), nothing changed.
   * `fence` is there only for a key handed to its holder from the line, while the record of that
   * hand-off lives; an uncontended grant keeps no fence in Redis (see
   * ../../store/capabilities.ts, `LockInfo.fence`).
   */
  inspect(key: string): Promise<LockInfo | null> {
    if (isReserved(key, this.clientPrefix)) return Promise.reject(reservedKeyError(key));
    return inspectLock(this.client, this.keysOf(key));
  }

  /**
   * Unsubscribes its inbox and closes the subscriber connection if the store opened it (never the
   * client, nor a subscriber you passed in), and stops listening to the client's `close` events
   * (`replicaAcks`). Waiters that come later poll.
   */
  close(): void {
    this.wake?.close();
    this.acks?.close();
    this.sharded?.close();
  }

  /** The channel a waiter for `key` names in its place: its shard channel, or the store's inbox. */
  private inboxOf(key: string): string {
    if (this.wake === undefined) return '';
    return this.sharded?.available === true ? this.sharded.channelOf(key) : this.inbox;
  }

  private watchChannel(key: string, token: string, listener: Parameters<WakeInbox['watch']>[1]): InboxWatch {
    return this.sharded?.available === true ? this.sharded.watch(key, token, listener) : this.wake!.watch(token, listener);
  }

  private keysOf(key: string): LockKeys {
    return this.layouts.of(key);
  }
}

/**
 * A Cluster's answer that the command reached the wrong node or came mid-migration: sending it
 * again on its own lets ioredis follow the redirection.
 */
function isClusterRedirection(error: Error): boolean {
  return /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(error.message);
}
