/**
 * The Redis backend: the store operations on one Redis (or a Redis Cluster, where every script
 * touches the keys of one hash slot). Acquire, release and extend are owner-checked Lua scripts
 * (see ./lua), called by SHA; acquire also issues the fencing token from a counter kept beside
 * the lock key.
 */
import { NOT_ACQUIRED, type AcquireResult, type ExtendOutcome, type ExtendRequest, type LockStore } from '../../store/LockStore.js';
import { checkKeyLayout, helperKey } from './keyLayout.js';
import { isNoScript, LuaScript } from './LuaScript.js';
import type { RedisClient } from './RedisClient.js';
import { luaScripts } from './lua/scripts.generated.js';

const acquireScript = LuaScript.of(luaScripts.acquire);
const releaseScript = LuaScript.of(luaScripts.release);
const extendScript = LuaScript.of(luaScripts.extend);

/** Suffix of the fence counter's key (see ./keyLayout.ts for where it lives). */
export const FENCE_SUFFIX = ':fence';

/**
 * {@link LockStore} on Redis through an ioredis client the caller owns (and closes).
 *
 * Keys: the lock itself is a string key holding its owner's token, with the lease as its TTL.
 * Beside it, `<key>:fence` (or `{<key>}:fence` for keys without a hash tag, so that both share a
 * Cluster hash slot) counts the fencing tokens issued for the key. The counter never expires: a
 * fence must stay above every fence issued before, so it costs one small key per lock name
 * ever used. (If Redis loses its data, say a restart without persistence, fences start again
 * from 1.)
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
 * const locker = createLocker({ store: new RedisLockStore(redis), ttl: 10_000 });
 * ```
 */
export class RedisLockStore implements LockStore {
  constructor(private readonly client: RedisClient) {}

  async tryAcquire(key: string, token: string, ttlMs: number): Promise<AcquireResult> {
    const fence = Number(await acquireScript.run(this.client, [key, helperKey(key, FENCE_SUFFIX)], [token, ttlMs]));
    return fence > 0 ? { acquired: true, fence } : NOT_ACQUIRED;
  }

  async release(key: string, token: string): Promise<boolean> {
    return (await releaseScript.run(this.client, [key], [token])) === 1;
  }

  async extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return extendOutcome(await extendScript.run(this.client, [key], [token, ttlMs]));
  }

  /**
   * Extends many leases in one pipeline (one round trip). Leases whose script the server did
   * not know (NOSCRIPT) are extended again by the script's source. On a Cluster, where a pipeline must stay
   * within one slot, each lease is extended with its own call (sent together, answered as they
   * come).
   */
  async extendMany(requests: readonly ExtendRequest[]): Promise<ExtendOutcome[]> {
    const client = this.client;
    if (client.isCluster === true || client.pipeline === undefined || requests.length === 1) {
      return Promise.all(requests.map((r) => this.extend(r.key, r.token, r.ttlMs)));
    }
    const pipeline = client.pipeline();
    for (const r of requests) pipeline.evalsha(extendScript.sha, 1, r.key, r.token, r.ttlMs);
    const replies = await pipeline.exec();
    if (replies === null) throw new Error('pipeline was discarded');
    return Promise.all(
      replies.map(([error, reply], i) => {
        if (error === null) return extendOutcome(reply);
        const r = requests[i]!;
        if (isNoScript(error)) return extendScript.runSource(client, [r.key], [r.token, r.ttlMs]).then(extendOutcome);
        throw error;
      }),
    );
  }

  checkKey(key: string): void {
    checkKeyLayout(key);
  }
}

function extendOutcome(reply: unknown): ExtendOutcome {
  return reply === 1 ? 'extended' : reply === -1 ? 'taken' : 'gone';
}
