/**
 * Guards of the mutex's Lua scripts (src/backends/redis/protocol/lua: acquire-4, release-4,
 * extend-1, raiseFence-1 and their lib/ pieces) found by a hand-made mutation run of those scripts
 * (each guard removed or weakened, the Redis and contract suites run): those no test protected —
 * the hand-off's places TTL raised only, never cut (release-4); the 'behind' condition (release-4);
 * the refusal of another token's hand-off record (lib/line.lua grantOf); a raise that never lowers
 * the record and the positive-integer check (raiseFence-1, lib/recordBlock.lua); a lock key of
 * another type answered as 'taken' (extend-1) — and those only slow end-to-end tests noticed
 * (keyExpiry, dataLoss, contention's round-trip count, attackForgedMutexSignal, the Cluster wake-up
 * tests), stated here as properties of one script call. Each test names the guard it protects.
 *
 * The scripts are called directly (EVAL of the embedded source; the store's own calls where they
 * say it best), on a private server.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { seedOf } from '../support/fenceBlocks.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'] });

/** A client of the suite's server, closed after the test. */
function client(): Redis {
  const redis = connect(suite.server);
  suite.closers.push(() => redis.disconnect());
  return redis;
}

interface InLine {
  readonly placeTtl: number;
  readonly mode?: 'keep' | 'leave';
  readonly inbox?: string;
}

/** The acquire script, called as the store calls it (in line when `line` is given). */
function acquire(redis: Redis, key: string, token: string, ttl: number, fences: number, line?: InLine): Promise<unknown> {
  const args: Array<string | number> = [token, ttl, fences];
  if (line !== undefined) args.push(line.placeTtl, line.mode ?? 'keep', line.inbox ?? '');
  return redis.eval(luaScripts.acquire.source, 4, ...lockKeys(key), ...args);
}

/** The release script; `said`: the last fence the caller says its grant gave out, or 'passed'. */
function release(redis: Redis, key: string, token: string, said?: number | 'passed'): Promise<unknown> {
  return redis.eval(luaScripts.release.source, 4, ...lockKeys(key), token, ...(said === undefined ? [] : [said]));
}

/** The messages published on `channels`, as they arrive. */
async function listen(channels: string[]): Promise<{ messages: Array<[string, string]>; settle: () => Promise<void> }> {
  const sub = client();
  const messages: Array<[string, string]> = [];
  sub.on('message', (channel: string, message: string) => messages.push([channel, message]));
  await sub.subscribe(...channels);
  const pub = client();
  let n = 0;
  return {
    messages,
    // Everything published before this call has arrived once a marker published after it has.
    settle: async () => {
      const marker = `marker ${++n}`;
      await pub.publish(channels[0]!, marker);
      await eventually(() => messages.some(([, m]) => m === marker), 3000, 2, 'the marker message');
      messages.splice(
        messages.findIndex(([, m]) => m === marker),
        1,
      );
    },
  };
}

/** The server's clock in ms (TIME). */
async function serverMs(redis: Redis): Promise<number> {
  const [sec, usec] = await redis.time();
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

describe('acquire-4.lua: a place in line', () => {
  // Guard: acquire-4.lua's queued answer `{0, pttl, 1, seed}`: the seed dates the caller's place, so
  // the waiter can tell a 'granted' signal sent before it (stale: this call found the key not its
  // own) from a fresh one, whatever order the two arrive in.
  // Guard: lib/clock.lua's milliseconds (`sec * 1000 + floor(usec / 1000)`) and acquire-4.lua's
  // place record `now + placeTtl`: a place lapses placeTtl after the server's clock at the call,
  // to the millisecond — not at the start of its second (up to 999 ms early, which would let a
  // release pass over a live waiter), and not at once.
  it("is answered with the server clock's seed, and recorded with its lapse time placeTtl after the server clock (ms), and its ttl, fences, place TTL and inbox", async () => {
    const redis = client();
    const key = 'place';
    const [, , line, places] = lockKeys(key);
    expect(await acquire(redis, key, 'A', 30_000, 1)).toEqual(expect.any(Number));
    for (let i = 0; i < 5; i++) {
      const [before, seedBefore] = [await serverMs(redis), await seedOf(redis)];
      const queued = (await acquire(redis, key, 'W', 700, 3, { placeTtl: 1234, inbox: 'rxjs-lock:inbox:w' })) as number[];
      const [after, seedAfter] = [await serverMs(redis), await seedOf(redis)];
      expect(queued).toEqual([0, expect.any(Number), 1, expect.any(Number)]);
      // the server clock's seed at the call, which dates the place: a hand-off signal dated before it is stale
      expect(queued[3]).toBeGreaterThanOrEqual(seedBefore);
      expect(queued[3]).toBeLessThanOrEqual(seedAfter);
      const [lapseAt, ...rest] = (await redis.hget(places, 'w:W'))!.split(' ');
      expect(rest).toEqual(['700', '3', '1234', 'rxjs-lock:inbox:w']);
      expect(Number(lapseAt)).toBeGreaterThanOrEqual(before + 1234);
      expect(Number(lapseAt)).toBeLessThanOrEqual(after + 1234);
      expect(await redis.zrange(line, 0, '-1')).toEqual(['W']);
      await sleep(150);
    }
  });
});

describe('release-4.lua: a hand-off', () => {
  // Guard: release-4.lua `if PTTL(places) < grantTtl then PEXPIRE places grantTtl`. Handing the
  // key to the only waiter empties the places hash (leaveLine deletes it), and the HSET of the
  // 'grant' record creates it again, without a TTL: without the PEXPIRE it would outlive a grantee
  // that never comes back, and keep every later acquire of the key off its common path.
  it('to the only waiter: the places hash kept for the grant record expires with the grant; a grantee that never comes back leaves no key', async () => {
    const redis = client();
    const key = 'only-waiter';
    const [lock, , line, places] = lockKeys(key);
    expect(await acquire(redis, key, 'A', 30_000, 1)).toEqual(expect.any(Number));
    expect(await acquire(redis, key, 'W', 300, 1, { placeTtl: 400 })).toEqual([0, expect.any(Number), 1, expect.any(Number)]);
    expect(await release(redis, key, 'A')).toBe(2);
    expect(await redis.get(lock)).toBe('W');
    expect(await redis.exists(line)).toBe(0);
    expect(await redis.hgetall(places)).toEqual({ grant: expect.stringMatching(/^W \d+ 1$/) });
    const ttl = await redis.pttl(places);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    await eventually(async () => (await redis.dbsize()) === 0, 3000, 20, 'every key of the lock gone after the grant');
  });

  // Guard: release-4.lua's `if PTTL(places) < grantTtl` — the hand-off only ever raises the places
  // hash's TTL: a short grant must not cut it to its own length, or the places of the waiters
  // behind would vanish with it, and the next look at the line would drop them as lapsed (the key
  // going to whoever comes, out of turn).
  it('with a short grant, keeps the places of the waiters behind: after the grant lapses, the next waiter still has its turn', async () => {
    const redis = client();
    const key = 'short-grant';
    const [lock, , , places] = lockKeys(key);
    expect(await acquire(redis, key, 'A', 30_000, 1)).toEqual(expect.any(Number));
    await acquire(redis, key, 'W1', 200, 1, { placeTtl: 3000 });
    await acquire(redis, key, 'W2', 30_000, 1, { placeTtl: 3000 });
    expect(await release(redis, key, 'A')).toBe(2);
    expect(await redis.get(lock)).toBe('W1');
    expect(await redis.pttl(places)).toBeGreaterThan(2000);
    await sleep(400); // W1 never comes back: its grant lapses
    expect(await redis.get(lock)).toBeNull();
    expect(await acquire(redis, key, 'C', 30_000, 1)).toEqual([0, -2, 0]);
    expect(await acquire(redis, key, 'W2', 30_000, 1, { placeTtl: 3000 })).toEqual([1, expect.any(Number), 30_000, 0, 1]);
  });

  // Guard: release-4.lua `reserved = said == 'passed' and 0`: a release that says the clock has
  // passed its block sets no floor above the clock, so the waiter it hands the key to gets every
  // fence its place asked for (a floor at seed + MAX_BLOCK would cut its block to one fence).
  it("after a 'passed' release, hands the waiter every fence it asked for, above the released one", async () => {
    const redis = client();
    const key = 'passed-handoff';
    const [, , , places] = lockKeys(key);
    const a = (await acquire(redis, key, 'A', 30_000, 1)) as number;
    await acquire(redis, key, 'W', 30_000, 16, { placeTtl: 3000 });
    await sleep(5);
    expect(await release(redis, key, 'A', 'passed')).toBe(2);
    const [grantee, fence, count] = (await redis.hget(places, 'grant'))!.split(' ');
    expect(grantee).toBe('W');
    expect(Number(fence)).toBeGreaterThan(a);
    expect(count).toBe('16');
  });

  // Guard: release-4.lua's 'behind' condition `now + grantTtl < behindLapse - behindPlaceTtl * 2 / 3`:
  // the waiter behind the grantee is told only when the grant may end before it looks again (it
  // refreshes its place every third of the place's lifetime at most); otherwise its own refresh
  // finds the key free in time, and a signal would only make every waiter ask again for nothing.
  it("tells the waiter behind the grantee ('behind') only when the grant may end before that waiter looks again", async () => {
    const redis = client();
    const { messages, settle } = await listen(['rxjs-lock:inbox:w1', 'rxjs-lock:inbox:w2']);
    const line = { placeTtl: 3000 };
    for (const [key, ttl] of [
      ['long', 30_000],
      ['short', 200],
    ] as const) {
      expect(await acquire(redis, key, 'A', 30_000, 1)).toEqual(expect.any(Number));
      await acquire(redis, key, 'W1', ttl, 1, { ...line, inbox: 'rxjs-lock:inbox:w1' });
      await acquire(redis, key, 'W2', 30_000, 1, { ...line, inbox: 'rxjs-lock:inbox:w2' });
      expect(await release(redis, key, 'A')).toBe(2);
    }
    await settle();
    // long: the grant lasts until W1's place would have lapsed (≈ 3 s), after W2's next refresh
    // (within 1 s); short: 200 ms, well before it
    expect(messages).toEqual([
      ['rxjs-lock:inbox:w1', expect.stringMatching(/^granted W1 \d+ 1 1 \d+$/)],
      ['rxjs-lock:inbox:w1', expect.stringMatching(/^granted W1 \d+ 1 1 \d+$/)],
      ['rxjs-lock:inbox:w2', 'behind W2 200'],
    ]);
  });
});

describe('lib/announce.lua', () => {
  // Guard: lib/announce.lua's choice of SPUBLISH for a shard channel ('…rxjs-lock:wake:{tag}…'):
  // a store on a Redis Cluster listens there with SSUBSCRIBE, which a PUBLISH never reaches.
  it('announces a hand-off on a shard channel inbox by SPUBLISH, on a broadcast inbox by PUBLISH', async () => {
    const redis = client();
    const shard = 'rxjs-lock:wake:{k}:w';
    const sub = client();
    const got: Array<[string, string, string]> = [];
    sub.on('smessage', (channel: string, message: string) => got.push(['s', channel, message]));
    sub.on('message', (channel: string, message: string) => got.push(['p', channel, message]));
    await sub.ssubscribe(shard);
    await sub.subscribe(shard, 'rxjs-lock:inbox:v');
    for (const [token, inbox] of [
      ['W', shard],
      ['V', 'rxjs-lock:inbox:v'],
    ] as const) {
      const key = `{k}:${token}`;
      expect(await acquire(redis, key, 'A', 30_000, 1)).toEqual(expect.any(Number));
      await acquire(redis, key, token, 30_000, 1, { placeTtl: 3000, inbox });
      expect(await release(redis, key, 'A')).toBe(2);
    }
    await redis.spublish(shard, 'marker');
    await eventually(() => got.some(([, , m]) => m === 'marker'), 3000, 2, 'the marker message');
    expect(got).toEqual([
      ['s', shard, expect.stringMatching(/^granted W \d+ 0 1 \d+$/)],
      ['p', 'rxjs-lock:inbox:v', expect.stringMatching(/^granted V \d+ 0 1 \d+$/)],
      ['s', shard, 'marker'],
    ]);
  });
});

describe('acquire-4.lua: the same token again', () => {
  // Guard: lib/line.lua grantOf's `grantee == token`: a call that finds the key its own answers
  // with the recorded hand-off only when that hand-off went to it. The scripts themselves never
  // leave another token's record beside a holder (a direct grant deletes it), so the record is
  // written by hand here, as a script of another version could have left it: answering its fence
  // would give the holder a fence an earlier holder already used.
  it("never answers another token's hand-off record: the holder's call sent again gets a block above its own", async () => {
    const redis = client();
    const key = 'stale-record';
    const [, , , places] = lockKeys(key);
    const first = (await acquire(redis, key, 'T', 30_000, 4)) as number;
    await redis.hset(places, 'grant', `X ${first - 100} 1`);
    const again = (await acquire(redis, key, 'T', 30_000, 4)) as number[];
    expect(again[0]).toBe(1);
    expect(again[1]).toBeGreaterThan(first + 3);
  });
});

describe('extend-1.lua', () => {
  // Guard: extend-1.lua's `redis.pcall('GET')` and its `-1` for an error: a lock key someone wrote
  // over with another type is another's key ('taken'), not an error — so the renewal of one such
  // key does not fail the others renewed with it, and the lease is given up as lost.
  it("a lock key of another type is 'taken', alone and among other renewals", async () => {
    const redis = client();
    const store = new RedisLockStore(redis);
    suite.closers.push(() => store.close());
    await redis.hset('over', 'field', 'value');
    expect(await redis.eval(luaScripts.extend.source, 1, 'over', 'T', 1000)).toBe(-1);
    expect(await store.extend('over', 'T', 1000)).toBe('taken');
    expect(await acquire(redis, 'mine', 'T', 1000, 1)).toEqual(expect.any(Number));
    expect(
      await store.extendMany([
        { key: 'over', token: 'T', ttlMs: 30_000 },
        { key: 'mine', token: 'T', ttlMs: 30_000 },
      ]),
    ).toEqual(['taken', 'extended']);
    expect(await redis.pttl('mine')).toBeGreaterThan(20_000);
    expect(await redis.type('over')).toBe('hash');
  });
});

describe('raiseFence-1.lua', () => {
  /** The raise script on a lock's fence counter. */
  const raise = (redis: Redis, fenceKey: string, last: number | string): Promise<unknown> => redis.eval(luaScripts.raiseFence.source, 1, fenceKey, last);

  // Guard: lib/recordBlock.lua's `last > counter` (raiseFence-1.lua records through it): a raise
  // never lowers the record — a second round from a slower quorum with a lower block must not
  // take back a floor another grant already set, or the next grant on that node starts inside it.
  it('never lowers the record: a lower raise keeps it, a higher one raises it', async () => {
    const redis = client();
    const [, fenceKey] = lockKeys('raised');
    const seed = await seedOf(redis);
    const high = seed + 4_000_000; // 1 s ahead
    expect(await raise(redis, fenceKey, high)).toBe(1);
    expect(Number(await redis.get(fenceKey))).toBe(high);
    expect(await raise(redis, fenceKey, high - 2_000_000)).toBe(1);
    expect(Number(await redis.get(fenceKey))).toBe(high);
    expect(await raise(redis, fenceKey, high + 8)).toBe(1);
    expect(Number(await redis.get(fenceKey))).toBe(high + 8);
    // it lives until the clock has passed it (≈ 1 s, + 2 ms), not longer than needed
    const ttl = await redis.pttl(fenceKey);
    expect(ttl).toBeGreaterThan(500);
    expect(ttl).toBeLessThanOrEqual(1010);
  });

  // Guard: raiseFence-1.lua `last > seed + MAX_LEAD` refused, and its positive-integer check: a
  // fence more than 60 s ahead of this node's clock (or not a fence at all) is an error, and the
  // record is left as it was.
  it('refuses a fence more than 60 s ahead of the node clock, and anything but a positive integer', async () => {
    const redis = client();
    const [, fenceKey] = lockKeys('refused');
    const seed = await seedOf(redis);
    await expect(raise(redis, fenceKey, seed + 61_000 * 4000)).rejects.toThrow(/more than 60 s ahead/);
    for (const bad of [0, -5, 1.5, 'x']) await expect(raise(redis, fenceKey, bad)).rejects.toThrow(/positive integer fence/);
    expect(await redis.exists(fenceKey)).toBe(0);
    expect(await raise(redis, fenceKey, seed + 59_000 * 4000)).toBe(1);
    expect(Number(await redis.get(fenceKey))).toBe(seed + 59_000 * 4000);
  });
});
