/**
 * The Redis backend: the store operations on one Redis (or a Redis Cluster, where every
 * operation touches a single key). Acquire is `SET key token NX PX ttl`; release and extend are
 * owner-checked Lua scripts (see ./lua), called by SHA.
 */
import { ACQUIRED, NOT_ACQUIRED, type AcquireResult, type LockStore } from '../../store/LockStore.js';
import { LuaScript } from './LuaScript.js';
import type { RedisClient } from './RedisClient.js';
import { luaScripts } from './lua/scripts.generated.js';

const releaseScript = new LuaScript(luaScripts.release.name, luaScripts.release.numberOfKeys, luaScripts.release.source);
const extendScript = new LuaScript(luaScripts.extend.name, luaScripts.extend.numberOfKeys, luaScripts.extend.source);

/**
 * {@link LockStore} on Redis through an ioredis client the caller owns (and closes).
 *
 * Store calls are bounded by the locker's `commandTimeout`, not by the client: a paused or
 * unreachable Redis fails the call with `LockStoreError` instead of hanging it.
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
    const reply = await this.client.set(key, token, 'PX', ttlMs, 'NX');
    return reply === 'OK' ? ACQUIRED : NOT_ACQUIRED;
  }

  async release(key: string, token: string): Promise<boolean> {
    return (await releaseScript.run(this.client, [key], [token])) === 1;
  }

  async extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    return (await extendScript.run(this.client, [key], [token, ttlMs])) === 1;
  }
}
