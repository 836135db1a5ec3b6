/**
 * Guards of the quorum store's Lua scripts (quorumAcquire-4, quorumRelease-3: one node's part of a
 * RedlockStore grant and release) and of FencedResource's (fencedWrite-1) found by a hand-made
 * mutation run of those scripts (mutation/lua/quorum.txt, fenced.txt: each guard removed or
 * weakened, the quorum store's and the fences' suites run): those no test protected, stated as
 * properties of one script call. Each test names the guard it protects.
 *
 * The scripts are called directly (EVAL of the embedded source), on a private server: a node of a
 * quorum store is one independent master, and these are its answers. Several calls run in one
 * MULTI where the property lives for less than a millisecond (a block of fences spans at most
 * 256 µs of the server's clock; a record of it lives ~2 ms).
 */
import type { ChainableCommander, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { decodeNodeAcquire } from '../../src/backends/redis/quorum/QuorumNode.js';
import { FencedResource } from '../../src/redis.js';
import { seedOf } from '../support/fenceBlocks.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'] });

/** Most fences one grant reserves (lua/lib/maxBlock.lua). */
const MAX_BLOCK = 1_024;

/** The acquire script's keys for `key`: the key, its fence record, the refusal note, the hint note. */
function acquireKeys(key: string): [string, string, string, string] {
  return [key, helperKey(key, 'fence'), helperKey(key, 'refused'), helperKey(key, 'hint')];
}

/** The acquire script's arguments, as QuorumNode.acquire sends them (`inbox` left out when undefined). */
function acquireArgs(token: string, ttl: number, fences: number | string, floor: number, inbox?: string): Array<string | number> {
  return inbox === undefined ? [token, ttl, fences, floor] : [token, ttl, fences, floor, inbox];
}

/** One node's acquire (quorumAcquire-4.lua), its raw reply. */
function acquire(redis: Redis, key: string, token: string, ttl: number, fences: number | string, floor: number, inbox?: string): Promise<unknown> {
  return redis.eval(luaScripts.quorumAcquire.source, 4, ...acquireKeys(key), ...acquireArgs(token, ttl, fences, floor, inbox));
}

/** The release script's keys and arguments; `said`: the last fence the caller says its grant gave out, or 'passed'. */
function releaseKeysAndArgs(key: string, token: string, said?: number | string): Array<string | number> {
  return [key, helperKey(key, 'fence'), helperKey(key, 'hint'), token, ...(said === undefined ? [] : [said])];
}

/** The fence seed of a TIME reply read in a transaction (lua/lib/clock.lua). */
function seedOfTime([sec, usec]: [string, string]): number {
  return (Number(sec) - 1735689600) * 4_000_000 + Number(usec) * 4;
}

/** Runs `tx` and answers its replies, failing on any error. */
async function replies(tx: ChainableCommander): Promise<unknown[]> {
  const results = (await tx.exec())!;
  for (const [error] of results) expect(error).toBeNull();
  return results.map(([, reply]) => reply);
}

describe('quorumAcquire-4.lua: the notes of a refusal', () => {
  // Guard: `SET KEYS[3] <token> PX 100`: the refusal note lasts 100 ms, so a grant within a poll
  // step of another token's refusal answers `waiting: 1` (and the locker lets the others in first)
  // — not for a few ms only, which a poller's next grant comes after, and not for seconds.
  it('notes the refused token for 100 ms', async () => {
    const redis = suite.admin;
    const key = 'refusal-note';
    expect(await acquire(redis, key, 'A', 30_000, 1, 0)).toEqual(expect.any(Number));
    const [, , refused] = acquireKeys(key);
    const [reply, note, ttl] = await replies(
      redis
        .multi()
        .eval(luaScripts.quorumAcquire.source, 4, ...acquireKeys(key), ...acquireArgs('B', 30_000, 1, 0))
        .get(refused)
        .pttl(refused),
    );
    expect(reply).toEqual([0, expect.any(Number)]);
    expect(note).toBe('B');
    expect(ttl).toBeGreaterThan(90);
    expect(ttl).toBeLessThanOrEqual(100);
  });

  // Guard: `if ARGV[5] and ARGV[5] ~= ''`: only a caller that listens for hints is noted where it
  // listens. A caller that says it does not (an empty inbox) must not overwrite the note of one that
  // does: that one would not be hinted when the key is given back.
  it("a caller that does not listen (inbox '') leaves the hint note of the one that listens", async () => {
    const redis = suite.admin;
    const key = 'hint-note';
    const [, , , hint] = acquireKeys(key);
    expect(await acquire(redis, key, 'A', 30_000, 1, 0)).toEqual(expect.any(Number));
    expect(await acquire(redis, key, 'W', 30_000, 1, 0, 'rxjs-lock:inbox:w')).toEqual([0, expect.any(Number)]);
    expect(await acquire(redis, key, 'X', 30_000, 1, 0, '')).toEqual([0, expect.any(Number)]);
    expect(await redis.get(hint)).toBe('rxjs-lock:inbox:w W');
    expect(await redis.pttl(hint)).toBeGreaterThan(1_000);
  });
});

describe('quorumAcquire-4.lua: the block of fences', () => {
  // Guard: `if floor > base + 1`: the floor is taken whenever it stands above the block the node
  // would start otherwise — also when it is just above it (a record R, a floor R + 2: the block
  // starts at R + 2, not R + 1). A winner that starts below the floor disagrees with the quorum's
  // block and costs the store a raise round, or, when it is among the lowest winners, lowers the
  // quorum's fence.
  it('a floor just above the fence record: the block starts at the floor', async () => {
    const redis = suite.admin;
    for (const [above, expected] of [
      [2, 2],
      [1, 1],
      [0, 1],
    ] as const) {
      const key = `floor-above-record-${above}`;
      const [, fenceKey] = acquireKeys(key);
      const record = (await seedOf(redis)) + 10_000 * 4_000;
      await redis.set(fenceKey, String(record), 'PX', 20_000);
      const floor = record + above;
      const answer = decodeNodeAcquire(await acquire(redis, key, 't', 30_000, 1, floor), 30_000, 1, floor);
      expect(answer, `floor record + ${above}`).toMatchObject({ acquired: true, fence: record + expected, fences: 1, ttl: 30_000 });
      expect(Number(await redis.get(fenceKey))).toBe(record + expected);
    }
  });

  // Guard: `if not (count >= 1) then count = 1`: a grant reserves at least one fence, whatever it
  // is asked (0 or less, or not a number): the caller's fence is its own, and the reply says how many it got (a
  // table, since it differs from what was asked).
  it('asked for no fences (0, or fewer), reserves one and says so', async () => {
    const redis = suite.admin;
    for (const asked of [0, -3, 'nan']) {
      const before = await seedOf(redis);
      const reply = await acquire(redis, `no-fences-${asked}`, 't', 30_000, asked, 0);
      expect(reply, `asked ${asked}`).toEqual([expect.any(Number), 1, expect.any(Number), 30_000]);
      const [fence, , seed] = reply as number[];
      expect(seed).toBeGreaterThanOrEqual(before);
      expect(fence).toBe(seed! + 1);
    }
  });

  // The store sends only safe integers from 1; a caller of another version might send anything. A
  // string that is not a number once failed the script after its SET had taken the key (a key held
  // for its TTL by a caller told of an error): it is read as 1 now, the bare reply (the seed).
  it('asked for a fence count that is not a number: reserves one, and answers', async () => {
    const redis = suite.admin;
    const before = await seedOf(redis);
    const reply = await acquire(redis, 'fences-not-a-number', 't', 30_000, 'x', 0);
    expect(typeof reply).toBe('number');
    expect(reply as number).toBeGreaterThanOrEqual(before);
  });

  // Guard: `not again` in the bare reply's condition: our own key found again (an earlier run of
  // this call took it, its answer lost) has only what is left of its TTL, which the table reply
  // says; a bare reply says the TTL asked for (QuorumNode.ts decodeNodeAcquire), and the store would
  // count the lock as held longer than this node holds it. The floor path is where the again case
  // could give a bare reply: the block is lifted above MAX_BLOCK, then to a floor further ahead.
  it('our own key again, with a floor taken: the table reply, with what the key has left', async () => {
    const redis = suite.admin;
    const key = 'again-floor';
    expect(await acquire(redis, key, 't', 2_000, 1, 0)).toEqual(expect.any(Number));
    const floor = (await seedOf(redis)) + 2_000 * 4_000;
    const reply = await acquire(redis, key, 't', 30_000, 1, floor);
    expect(reply).toEqual([floor, 1, expect.any(Number), expect.any(Number)]);
    const answer = decodeNodeAcquire(reply, 30_000, 1, floor);
    if (!answer.acquired) throw new Error('our own key again was refused');
    expect(answer.ttl).toBeGreaterThan(0);
    expect(answer.ttl).toBeLessThanOrEqual(2_000);
  });
});

describe("quorumRelease-3.lua: the release's record of its block", () => {
  // Guard: the default `last = seed + MAX_BLOCK`: a release that does not say how far its grant
  // reserved records the most a grant can have reserved from its clock, so the next grant, however
  // soon, starts above the whole block of the grant it ends (which started at the clock and was not
  // recorded). In one transaction: a grant of 1,024 fences, its release, the next grant — within
  // the 256 µs the block leads the clock by.
  it('unsaid, records the most a grant reserves: the next grant, at once, starts above the whole block', async () => {
    const redis = suite.admin;
    const key = 'unsaid';
    const [first, released, next] = await replies(
      redis
        .multi()
        .eval(luaScripts.quorumAcquire.source, 4, ...acquireKeys(key), ...acquireArgs('A', 30_000, MAX_BLOCK, 0))
        .eval(luaScripts.quorumRelease.source, 3, ...releaseKeysAndArgs(key, 'A'))
        .eval(luaScripts.quorumAcquire.source, 4, ...acquireKeys(key), ...acquireArgs('B', 30_000, 1, 0)),
    );
    expect(first).toEqual(expect.any(Number)); // (the bare reply: the block starts at the seed)
    expect(released).toBe(1);
    const a = decodeNodeAcquire(first, 30_000, MAX_BLOCK, 0);
    const b = decodeNodeAcquire(next, 30_000, 1, 0);
    if (!a.acquired || !b.acquired) throw new Error('refused');
    expect(b.fence).toBeGreaterThan(a.fence + MAX_BLOCK - 1);
  });

  // Guard: `last >= 0 and last < seed + MAX_BLOCK`: what the caller says is believed only up to the
  // most a grant can have reserved from this clock; beyond it (or below 0) the script records that
  // most. A release saying a fence far ahead must not push the record (and every later grant's
  // fences) that far ahead of the clock; one saying a negative fence must not record nothing.
  it('said beyond the most a grant reserves, or below 0: records seed + MAX_BLOCK', async () => {
    const redis = suite.admin;
    for (const said of [(await seedOf(redis)) + 3_600_000 * 4_000, -5]) {
      const key = `said-${said}`;
      const [, fenceKey] = acquireKeys(key);
      expect(await acquire(redis, key, 'A', 30_000, 1, 0)).toEqual(expect.any(Number));
      const [before, released, record, after] = await replies(
        redis
          .multi()
          .time()
          .eval(luaScripts.quorumRelease.source, 3, ...releaseKeysAndArgs(key, 'A', said))
          .get(fenceKey)
          .time(),
      );
      expect(released).toBe(1);
      expect(record, `said ${said}`).not.toBeNull();
      expect(Number(record)).toBeGreaterThanOrEqual(seedOfTime(before as [string, string]) + MAX_BLOCK);
      expect(Number(record)).toBeLessThanOrEqual(seedOfTime(after as [string, string]) + MAX_BLOCK);
    }
  });

  // Guard: `last > seed` before the record is written: a block the clock has passed needs no
  // record (the clock keeps the next grant above it), and its record's TTL, counted from its lead
  // over the clock, would be 0 or less — an error, and the release would fail after the key was
  // deleted.
  it('said a fence the clock has passed: answers 1 and records nothing', async () => {
    const redis = suite.admin;
    const key = 'said-passed-fence';
    const [lock, fenceKey] = acquireKeys(key);
    const reply = await acquire(redis, key, 'A', 30_000, 1, 0);
    const grant = decodeNodeAcquire(reply, 30_000, 1, 0);
    if (!grant.acquired) throw new Error('refused');
    for (const said of [grant.fence, 1]) {
      await redis.set(lock, 'A', 'PX', 30_000);
      await sleep(5); // (the clock passes the block by milliseconds)
      expect(await redis.eval(luaScripts.quorumRelease.source, 3, ...releaseKeysAndArgs(key, 'A', said)), `said ${said}`).toBe(1);
      expect(await redis.exists(lock, fenceKey)).toBe(0);
    }
  });
});

describe('fencedWrite-1.lua: fences compared as numbers', () => {
  // Guard: `tonumber` on both sides of `fence < highest`: fences compare as numbers, not as
  // strings — as strings, '10' < '9', and the holder of fence 10 would be refused after fence 9.
  it('a fence with more digits is higher: 9 then 10, 99 then 100 are accepted; 9 after 10 is refused', async () => {
    const resource = new FencedResource(suite.admin, 'resource:digits');
    expect(await resource.write(9, 'nine')).toEqual({ accepted: true, fence: 9 });
    expect(await resource.write(10, 'ten')).toEqual({ accepted: true, fence: 10 });
    expect(await resource.write(9, 'stale')).toEqual({ accepted: false, highestFence: 10 });
    expect(await resource.write(99, 'ninety-nine')).toEqual({ accepted: true, fence: 99 });
    expect(await resource.write(100, 'a hundred')).toEqual({ accepted: true, fence: 100 });
    expect(await resource.read()).toEqual({ fence: 100, value: 'a hundred' });
  });
});
