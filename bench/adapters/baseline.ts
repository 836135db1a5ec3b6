/**
 * The hand-written lock most code bases start with: `SET key token NX PX ttl`, a fixed 10 ms
 * sleep after each failed attempt until the wait limit, and release by an owner-checked
 * compare-and-delete script called with EVALSHA (EVAL once if the server does not know it yet).
 */
import { createHash, randomUUID } from 'node:crypto';
import { AcquireTimeout, adapterOf, type AdapterContext, type Held, type LockAdapter, type Limits, type RedisConnection } from './types.js';

const RETRY_SLEEP_MS = 10;
const COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const COMPARE_AND_DELETE_SHA = createHash('sha1').update(COMPARE_AND_DELETE).digest('hex');

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs a script by its SHA (EVALSHA), and sends its source (EVAL) once if the server does not know it. */
export async function evalScript(
  redis: RedisConnection,
  lua: string,
  sha: string,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<unknown> {
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return redis.eval(lua, keys.length, ...keys, ...args);
  }
}

const compareAndDelete = (redis: RedisConnection, key: string, token: string) => evalScript(redis, COMPARE_AND_DELETE, COMPARE_AND_DELETE_SHA, [key], [token]);

/** Takes a lock with `tryOnce` until it succeeds, sleeping 10 ms after each refusal, or gives up at the wait limit. */
export async function pollForLock(tryOnce: () => Promise<Held | null>, key: string, limits: Limits): Promise<Held> {
  const deadline = performance.now() + limits.waitTimeoutMs;
  for (;;) {
    const held = await tryOnce();
    if (held !== null) return held;
    const left = deadline - performance.now();
    if (left <= 0) throw new AcquireTimeout(`"${key}" stayed held for ${limits.waitTimeoutMs} ms`);
    await sleep(Math.min(RETRY_SLEEP_MS, left));
  }
}

export async function createBaseline(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();

  function acquire(key: string, limits: Limits): Promise<Held> {
    const token = randomUUID();
    return pollForLock(
      async () =>
        (await redis.set(key, token, 'PX', limits.ttlMs, 'NX')) === 'OK'
          ? {
              release: () =>
                compareAndDelete(redis, key, token).then(
                  () => undefined,
                  () => undefined,
                ),
            }
          : null,
      key,
      limits,
    );
  }

  // holdUntilAborted: the same naive pattern as with redlock: race the acquire against a timer,
  // release in `finally` if it won; an abandoned acquire keeps polling and nobody releases what it gets.
  return adapterOf(acquire, async () => undefined);
}
