/**
 * The Redis backend: the store operations on one Redis (or a Redis Cluster, where every script
 * touches the keys of one hash slot). Acquire, release, extend and leave are owner-checked Lua
 * scripts (see ./lua), called by SHA. Acquire also issues the fencing token; waiters queue in
 * Redis, and a release hands the key straight to the first of them and wakes it by pub/sub.
 */
import { LockOptionsError } from '../../errors.js';
import { MAX_MS } from '../../options/limits.js';
import {
  NOT_ACQUIRED,
  type AcquireResult,
  type ExtendOutcome,
  type ExtendRequest,
  type LockStore,
  type StoreWatch,
  type WakeSignal,
} from '../../store/LockStore.js';
import { checkKeyLayout, helperKey } from './keyLayout.js';
import { isNoScript, LuaScript } from './LuaScript.js';
import type { RedisClient, RedisSubscriber } from './RedisClient.js';
import { WakeInbox } from './WakeInbox.js';
import { v4 as uuidv4 } from 'uuid';
import { luaScripts } from './lua/scripts.generated.js';

const acquireScript = LuaScript.of(luaScripts.acquire);
const releaseScript = LuaScript.of(luaScripts.release);
const extendScript = LuaScript.of(luaScripts.extend);
const leaveScript = LuaScript.of(luaScripts.leave);

/** Suffixes of a lock's helper keys and channel (see ./keyLayout.ts for where they live). */
export const FENCE_SUFFIX = ':fence';
export const LINE_SUFFIX = ':line';
export const LAPSES_SUFFIX = ':lapses';
/** Prefix of the stores' inbox channels (see ./WakeInbox.ts). */
export const INBOX_PREFIX = 'rxjs-lock:inbox:';

/** Options of {@link RedisLockStore}. */
export interface RedisLockStoreOptions {
  /**
   * Wake waiters by pub/sub when a release hands them the key. Turn it off for a Redis without
   * pub/sub (some managed services): waiters then find their grant by polling.
   * @default true
   */
  wakeUp?: boolean;
  /**
   * The connection that receives wake-up signals. It is put in subscriber mode, so it cannot be
   * the client used for commands.
   * @default client.duplicate(), opened on the first wait and closed when no key is watched
   */
  subscriber?: RedisSubscriber;
  /**
   * How long a waiter's place in line lasts without being renewed, in ms (an integer from 100 to
   * 2147483647). A waiter renews it with every attempt; one that died loses it after this long,
   * and a key handed to it meanwhile lapses when its place would have. Waiters that are woken by
   * pub/sub poll only every third of this.
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
}

/**
 * {@link LockStore} on Redis through an ioredis client the caller owns (and closes).
 *
 * Keys, all in the lock key's Cluster hash slot (`<key>:x` when the key has a `{…}` hash tag,
 * else `{<key>}:x`): the lock itself is a string key holding its owner's token with the lease as
 * its TTL; `:fence` counts the fencing tokens issued for the key (it never expires: fences must
 * only grow, so it costs one small key per lock name ever used, and it restarts from 0 if Redis
 * loses its data); `:line` and `:lapses` hold the waiters in line while there are any. Each store
 * has an inbox channel (`rxjs-lock:inbox:<uuid>`) on which releases announce grants to its waiters.
 *
 * Fair hand-off: a waiter that finds the key held takes a place in line. A release with waiters in
 * line does not free the key: it hands it to the first live waiter (new fence, TTL until that
 * waiter's place would have lapsed) and publishes the grant to that waiter's inbox; the waiter,
 * woken at once (and alone), later renews it to its own TTL. So a hot key goes round the processes in arrival order, with one round trip per
 * release and no polling storm, and a process that just released cannot grab it back ahead of
 * those in line.
 *
 * Store calls are bounded by the locker's `commandTimeout`, not by the client: a paused or
 * unreachable Redis fails the call with `LockStoreError` instead of hanging it. Lease renewals
 * of many leases go out as one pipeline (on a Cluster, one call per lease).
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
 * // on shutdown: store.close() (the subscriber it opened), then redis.quit()
 * ```
 */
export class RedisLockStore implements LockStore {
  private readonly wake: WakeInbox | undefined;
  private readonly placeTtl: number;

  constructor(
    private readonly client: RedisClient,
    options: RedisLockStoreOptions = {},
  ) {
    if (typeof options !== 'object' || options === null) throw new LockOptionsError('options', 'an object of RedisLockStore options', options);
    const { wakeUp = true, subscriber, placeTtl = 3000, lingerMs = 2000, ...unknown } = options;
    const extra = Object.keys(unknown)[0];
    if (extra !== undefined) throw new LockOptionsError(`options.${extra}`, 'one of the known RedisLockStore options: wakeUp, subscriber, placeTtl, lingerMs', (unknown as Record<string, unknown>)[extra]);
    if (typeof wakeUp !== 'boolean') throw new LockOptionsError('wakeUp', 'true or false', wakeUp);
    if (!Number.isInteger(placeTtl) || placeTtl < 100 || placeTtl > MAX_MS) throw new LockOptionsError('placeTtl', `an integer from 100 to ${MAX_MS} (ms)`, placeTtl);
    if (!Number.isInteger(lingerMs) || lingerMs < 0 || lingerMs > MAX_MS) throw new LockOptionsError('lingerMs', `an integer from 0 to ${MAX_MS} (ms)`, lingerMs);
    if (subscriber !== undefined && (typeof subscriber !== 'object' || subscriber === null || typeof subscriber.subscribe !== 'function')) {
      throw new LockOptionsError('subscriber', 'an ioredis connection for pub/sub', subscriber);
    }
    this.placeTtl = placeTtl;
    if (wakeUp) {
      const inbox = INBOX_PREFIX + uuidv4();
      if (subscriber !== undefined) this.wake = new WakeInbox(inbox, () => subscriber, lingerMs, false);
      else if (typeof client.duplicate === 'function') this.wake = new WakeInbox(inbox, () => client.duplicate!(), lingerMs, true);
    }
  }

  async tryAcquire(key: string, token: string, ttlMs: number, queue = false): Promise<AcquireResult> {
    const args = queue ? [token, ttlMs, this.placeTtl, this.wake?.channel ?? ''] : [token, ttlMs];
    const answer = (await acquireScript.run(this.client, this.keysOf(key), args)) as number | number[];
    if (typeof answer === 'number') return { acquired: true, fence: answer };
    const reply = answer;
    if (reply[0] === 1) {
      const ttl = Math.max(0, reply[2]!);
      return ttl === ttlMs ? { acquired: true, fence: reply[1]!, waiting: reply[3]! } : { acquired: true, fence: reply[1]!, ttl, waiting: reply[3]! };
    }
    const pttl = reply[1]!;
    if (pttl < 0 && reply[2] !== 1) return NOT_ACQUIRED;
    return reply[2] === 1 ? { acquired: false, holderTtl: pttl >= 0 ? pttl : undefined, queued: true, placeTtl: this.placeTtl } : { acquired: false, holderTtl: pttl };
  }

  async release(key: string, token: string): Promise<boolean> {
    return ((await releaseScript.run(this.client, this.keysOf(key), [token])) as number) > 0;
  }

  async extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return extendOutcome(await extendScript.run(this.client, [key], [token, ttlMs]));
  }

  async leave(key: string, token: string): Promise<boolean> {
    return (await leaveScript.run(this.client, [key, helperKey(key, LINE_SUFFIX), helperKey(key, LAPSES_SUFFIX)], [token, this.wake?.channel ?? ''])) === 1;
  }

  /**
   * Extends many leases in one pipeline (one round trip). If the server did not know the script
   * (NOSCRIPT: first use, restart, SCRIPT FLUSH), the first such lease is extended by the script's
   * source, which caches it, and the others go out again as one pipeline by SHA. On a Cluster,
   * where a pipeline must stay within one slot, each lease is extended with its own call (sent
   * together, answered as they come).
   */
  async extendMany(requests: readonly ExtendRequest[]): Promise<ExtendOutcome[]> {
    const client = this.client;
    if (client.isCluster === true || client.pipeline === undefined || requests.length === 1) {
      return Promise.all(requests.map((r) => this.extend(r.key, r.token, r.ttlMs)));
    }
    const outcomes = new Array<ExtendOutcome>(requests.length);
    let pending = requests.map((_, i) => i);
    for (let round = 0; pending.length > 0; round++) {
      const pipeline = client.pipeline();
      for (const i of pending) pipeline.evalsha(extendScript.sha, 1, requests[i]!.key, requests[i]!.token, requests[i]!.ttlMs);
      const replies = await pipeline.exec();
      if (replies === null) throw new Error('pipeline was discarded');
      const unknown: number[] = [];
      replies.forEach(([error, reply], n) => {
        const i = pending[n]!;
        if (error === null) outcomes[i] = extendOutcome(reply);
        else if (isNoScript(error) && round === 0) unknown.push(i);
        else throw error;
      });
      if (unknown.length === 0) break;
      const first = requests[unknown[0]!]!;
      outcomes[unknown[0]!] = extendOutcome(await extendScript.runSource(client, [first.key], [first.token, first.ttlMs]));
      pending = unknown.slice(1);
    }
    return outcomes;
  }

  /** Grants to `token` (queued for `key`), by pub/sub to this store's inbox (absent when wake-up is off). */
  get watch(): ((key: string, token: string, listener: (signal: WakeSignal) => void) => StoreWatch) | undefined {
    const wake = this.wake;
    if (wake === undefined) return undefined;
    return (_key, token, listener) =>
      wake.watch(token, (message) => {
        const [, granted, fence, waiting] = message.split(' ');
        if (granted === token && fence !== undefined) listener({ type: 'granted', token, fence: Number(fence), ttl: this.placeTtl, waiting: Number(waiting ?? 0) });
      });
  }

  checkKey(key: string): void {
    checkKeyLayout(key);
  }

  /** Unsubscribes its inbox, and closes the subscriber connection if the store opened it (not the client). */
  close(): void {
    this.wake?.close();
  }

  private keysOf(key: string): string[] {
    return [key, helperKey(key, FENCE_SUFFIX), helperKey(key, LINE_SUFFIX), helperKey(key, LAPSES_SUFFIX)];
  }
}

function extendOutcome(reply: unknown): ExtendOutcome {
  return reply === 1 ? 'extended' : reply === -1 ? 'taken' : 'gone';
}
