/**
 * `quorum-floor`, a reference for the uncontended quorum scenarios (see ../libraries.ts): the least
 * a *fenced* quorum lock pays, one round of script calls per acquire and one per release.
 *
 * Acquire: one EVALSHA per node, all sent at once, in the shape of the quorum store's
 * (../../src/backends/redis/protocol/lua/quorumAcquire-4.lua: the lock key, its fence record
 * `rxjs-lock:fence:{<key>}`, the two helper keys; token, ttl, fences, floor, inbox), doing only
 * `SET lock token NX PX ttl` and, when set, the fence: the server's clock (TIME) in fence seeds,
 * the fence record, the block start = max(seed, record, floor − 1), the record written (SET with
 * PX until the clock has passed it), the fence returned; else 0. Held once a majority of nodes
 * granted (the fence: the highest they answered), as redlock decides on the first majority;
 * otherwise released on every node and tried again after the baseline's 10 ms sleep. Release: a
 * compare-and-delete (GET + DEL) on every node, as redlock's, done once a majority answered.
 *
 * The fence record on each node on each grant is what fencing costs (the quorum store's floor
 * approach, ../../src/backends/redis/quorum/FenceFloor.ts); redlock has no fences. So: between
 * this and redlock, what fencing costs; between rxjs-lock and this, the engine, the quorum
 * store's client machinery (its rounds, timeouts, floor estimate, answers decoded), its hints and
 * the rest of its scripts' work (the release's fence record among it).
 *
 * A reference, not a safe library: the floor is this process's wall clock plus 2 ms, which is
 * right only because every server runs on this machine, on the same clock. The quorum store
 * learns each node's clock instead.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { evalScript, pollForLock } from './baseline.js';
import { adapterOf, type AdapterContext, type LockAdapter, type Limits } from './types.js';

// KEYS: lock, fence record, refused, hint (the quorum store's); ARGV: token, ttl, fences (1 here:
// one fence a grant), floor, inbox. The seed as lua/lib/clock.lua: 4 per µs since 2025-01-01.
const ACQUIRE = [
  "if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end",
  "local t = redis.call('time')",
  'local seed = (t[1] - 1735689600) * 4000000 + t[2] * 4',
  "local fence = math.max(seed, tonumber(redis.call('get', KEYS[2]) or '0'), tonumber(ARGV[4]) - 1) + 1",
  "redis.call('set', KEYS[2], string.format('%.0f', fence), 'PX', math.floor((fence - seed) / 4000) + 2)",
  'return fence',
].join('\n');
// KEYS: lock, fence record, hint (the quorum store's release); ARGV: token, the grant's last fence.
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
const ACQUIRE_SHA = sha(ACQUIRE);
const RELEASE_SHA = sha(RELEASE);

/** Fence seeds per ms (lua/lib/clock.lua), and the seed's origin, 2025-01-01T00:00:00Z, in ms. */
const SEEDS_PER_MS = 4_000;
const SEED_ORIGIN_MS = Date.UTC(2025, 0, 1);
/** The floor's margin above this process's clock (FenceFloor.ts FLOOR_MARGIN_MS). */
const FLOOR_MARGIN_MS = 2;

/** The fence floor of an acquire sent now: this process's wall clock (µs resolution) in seeds, plus the margin. */
const floorNow = (): number => Math.ceil((performance.timeOrigin + performance.now() - SEED_ORIGIN_MS + FLOOR_MARGIN_MS) * SEEDS_PER_MS);

/**
 * Resolves once `quorum` of `calls` answered a fence (with the highest of them), or null once so
 * many refused or failed that they cannot.
 */
function majority(calls: ReadonlyArray<Promise<unknown>>, quorum: number): Promise<number | null> {
  return new Promise((resolve) => {
    let granted = 0;
    let refused = 0;
    let fence = 0;
    for (const call of calls) {
      const vote = (answer: unknown) => {
        if (typeof answer === 'number' && answer > 0) {
          fence = Math.max(fence, answer);
          if (++granted === quorum) resolve(fence);
        } else if (++refused === calls.length - quorum + 1) resolve(null);
      };
      call.then(vote, () => vote(0));
    }
  });
}

/** Resolves once `quorum` of `calls` settled. */
function settled(calls: ReadonlyArray<Promise<unknown>>, quorum: number): Promise<void> {
  return new Promise((resolve) => {
    let answered = 0;
    const count = () => {
      if (++answered === quorum) resolve();
    };
    for (const call of calls) call.then(count, count);
  });
}

export async function createQuorumFloor(ctx: AdapterContext): Promise<LockAdapter> {
  const clients: Redis[] = await ctx.connectNodes();
  const quorum = Math.floor(clients.length / 2) + 1;
  // (as the quorum store's: a channel name it would listen on for hints; nothing listens here)
  const inbox = `rxjs-lock:inbox:${randomUUID()}`;
  const acquire = (name: string, limits: Limits) => {
    const token = randomUUID();
    const fenceKey = `rxjs-lock:fence:{${name}}`;
    const hintKey = `rxjs-lock:hint:{${name}}`;
    const keys = [name, fenceKey, `rxjs-lock:refused:{${name}}`, hintKey];
    const releaseEverywhere = (fence: number) =>
      clients.map((redis) => evalScript(redis, RELEASE, RELEASE_SHA, [name, fenceKey, hintKey], [token, fence]).catch(() => undefined));
    return pollForLock(
      async () => {
        const floor = floorNow();
        const calls = clients.map((redis) => evalScript(redis, ACQUIRE, ACQUIRE_SHA, keys, [token, limits.ttlMs, 1, floor, inbox]));
        const fence = await majority(calls, quorum);
        if (fence === null) {
          // Every node that granted (or may still) gives the key back before the next try.
          await Promise.allSettled(calls);
          await Promise.all(releaseEverywhere(0));
          return null;
        }
        return { release: () => settled(releaseEverywhere(fence), quorum) };
      },
      name,
      limits,
    );
  };
  return adapterOf(acquire, async () => undefined);
}
