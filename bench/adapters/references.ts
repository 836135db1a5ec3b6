/**
 * Two references that are not libraries, to say where a gap to the baseline comes from (the
 * uncontended and many-keys scenarios run them; see ../libraries.ts):
 *
 * - `store-only`: rxjs-lock's `RedisLockStore` called directly, with no engine above it:
 *   `tryAcquire` then `release` with the grant, the baseline's 10 ms sleep between refused tries.
 *   What is left between it and rxjs-lock is the engine's cost; what is left between it and the
 *   baseline is the store's protocol (its scripts on the server, their calls on the client).
 * - `script-floor`: the baseline's loop, but each call a Lua script sent with EVALSHA in the
 *   store's shape (the four keys of a lock, the same arguments), which does only what the
 *   baseline does (SET NX PX; compare-and-delete). The least any lock pays whose acquire and
 *   release are one script call each: the floor below the store's protocol.
 */
import { createHash, randomUUID } from 'node:crypto';
import type * as RedisEntry from '../../src/redis.js';
import { evalScript, pollForLock } from './baseline.js';
import { AcquireTimeout, Background, holdRacingAbort, type AdapterContext, type Held, type LockAdapter, type Limits } from './types.js';

const { RedisLockStore } = (await import(new URL('../../dist/esm/redis.js', import.meta.url).href)) as typeof RedisEntry;

/** The adapter around an `acquire`: holdUntilAborted the baseline's way. */
function adapterOf(acquire: (name: string, limits: Limits) => Promise<Held>, close: () => Promise<void>): LockAdapter {
  const background = new Background();
  return {
    storeKey: (name) => name,
    acquire,
    holdUntilAborted: (name, limits, signal, section) =>
      holdRacingAbort(acquire(name, limits), background, signal, section, (e) => e instanceof AcquireTimeout),
    settle: () => background.settle(),
    close,
  };
}

export async function createStoreOnly(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  // No wake-ups: nothing waits in line here, and the subscriber connection would be one more.
  const store = new RedisLockStore(redis, { wakeUp: false });
  const acquire = (name: string, limits: Limits) => {
    const token = randomUUID();
    return pollForLock(
      async () => {
        const result = await store.tryAcquire(name, token, limits.ttlMs);
        if (!result.acquired) return null;
        const grant = { fence: result.fence, fences: 1, answeredAt: performance.now() };
        return {
          release: () =>
            store.release(name, token, grant).then(
              () => undefined,
              () => undefined,
            ),
        };
      },
      name,
      limits,
    );
  };
  return adapterOf(acquire, async () => undefined);
}

// The shapes of the store's calls: acquire(lock, fence, line, places; token, ttl, fences) and
// release(lock, fence, line, places; token, 'passed'), with the baseline's work inside.
const ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
const ACQUIRE_SHA = sha(ACQUIRE);
const RELEASE_SHA = sha(RELEASE);

export async function createScriptFloor(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  const acquire = (name: string, limits: Limits) => {
    const token = randomUUID();
    const keys = [name, `rxjs-lock:fence:{${name}}`, `rxjs-lock:line:{${name}}`, `rxjs-lock:places:{${name}}`];
    return pollForLock(
      async () => {
        if ((await evalScript(redis, ACQUIRE, ACQUIRE_SHA, keys, [token, limits.ttlMs, 1])) !== 1) return null;
        return {
          release: () =>
            evalScript(redis, RELEASE, RELEASE_SHA, keys, [token, 'passed']).then(
              () => undefined,
              () => undefined,
            ),
        };
      },
      name,
      limits,
    );
  };
  return adapterOf(acquire, async () => undefined);
}
