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
import type { Redis } from 'ioredis';
import type * as RedisEntry from '../../src/redis.js';
import { AcquireTimeout, Background, whenAborted, type AdapterContext, type Held, type LockAdapter, type Limits } from './types.js';

const { RedisLockStore } = (await import(new URL('../../dist/esm/redis.js', import.meta.url).href)) as typeof RedisEntry;

const RETRY_SLEEP_MS = 10;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Takes the lock with `tryOnce` until it succeeds or the wait limit runs out, the baseline's way. */
async function poll(tryOnce: () => Promise<Held | null>, key: string, limits: Limits): Promise<Held> {
  const deadline = performance.now() + limits.waitTimeoutMs;
  for (;;) {
    const held = await tryOnce();
    if (held !== null) return held;
    const left = deadline - performance.now();
    if (left <= 0) throw new AcquireTimeout(`"${key}" stayed held for ${limits.waitTimeoutMs} ms`);
    await sleep(Math.min(RETRY_SLEEP_MS, left));
  }
}

/** The adapter around an `acquire`: holdUntilAborted as the baseline does it. */
function adapterOf(acquire: (name: string, limits: Limits) => Promise<Held>, close: () => Promise<void>): LockAdapter {
  const background = new Background();
  return {
    storeKey: (name) => name,
    acquire,
    async holdUntilAborted(name, limits, signal, section) {
      const acquiring = acquire(name, limits);
      background.track(acquiring);
      const first = await Promise.race([acquiring.then((held) => ({ held }), (error: unknown) => ({ error })), whenAborted(signal).then(() => null)]);
      if (first === null) return 'cancelled';
      if ('error' in first) return first.error instanceof AcquireTimeout ? 'timeout' : 'error';
      try {
        section.enter();
        await whenAborted(signal);
        section.exit();
      } finally {
        await first.held.release();
      }
      return 'held';
    },
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
    return poll(
      async () => {
        const result = await store.tryAcquire(name, token, limits.ttlMs);
        if (!result.acquired) return null;
        const grant = { fence: result.fence, fences: 1, answeredAt: performance.now() };
        return { release: () => store.release(name, token, grant).then(() => undefined, () => undefined) };
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

async function evalsha(redis: Redis, lua: string, digest: string, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  try {
    return await redis.evalsha(digest, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return redis.eval(lua, keys.length, ...keys, ...args);
  }
}

export async function createScriptFloor(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  const acquire = (name: string, limits: Limits) => {
    const token = randomUUID();
    const keys = [name, `rxjs-lock:fence:{${name}}`, `rxjs-lock:line:{${name}}`, `rxjs-lock:places:{${name}}`];
    return poll(
      async () => {
        if ((await evalsha(redis, ACQUIRE, ACQUIRE_SHA, keys, [token, limits.ttlMs, 1])) !== 1) return null;
        return { release: () => evalsha(redis, RELEASE, RELEASE_SHA, keys, [token, 'passed']).then(() => undefined, () => undefined) };
      },
      name,
      limits,
    );
  };
  return adapterOf(acquire, async () => undefined);
}
