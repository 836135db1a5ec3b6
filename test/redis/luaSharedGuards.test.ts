/**
 * Guards of the shared-lock Lua scripts (acquireShared, releaseShared, leaveShared, extendShared
 * and lib/shared.lua) that hand-made mutants of the scripts found unprotected by the other tests:
 * each test here fails when the guard it names is removed or weakened. They run the scripts on a
 * private Redis, through the store's shared methods or, where a test needs a place TTL or an inbox
 * of its own, the embedded script itself, and read the five keys with an admin client.
 */
import { describe, expect, it } from 'vitest';
import { sharedKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite();

function newStore(): RedisLockStore {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, { wakeUp: false });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
  );
  return store;
}

interface Ask {
  readonly ttl?: number;
  readonly weight?: number;
  readonly capacity?: number;
  readonly placeTtl?: number;
  readonly place?: 'keep' | 'leave';
  readonly inbox?: string;
}

/**
 * The acquireShared script, run as is: {1, fence, ttl left, waiting, by this run, fences} when
 * `token` holds, {0, ms until the first lease ends, queued[, seed]} when not.
 */
async function acquire(key: string, token: string, ask: Ask = {}): Promise<number[]> {
  const { ttl = 30_000, weight = 1, capacity = 1, placeTtl = 30_000, place = 'keep', inbox = '' } = ask;
  const script = luaScripts.acquireShared;
  return (await suite.admin.eval(script.source, script.numberOfKeys, ...sharedKeys(key), token, ttl, weight, capacity, placeTtl, place, inbox)) as number[];
}

/** The server's clock in ms (what the scripts read). */
async function serverNow(): Promise<number> {
  const [sec, usec] = await suite.admin.time();
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

/** How long `token`'s lease has left, by its score in the holders zset (null: not a holder). */
async function leaseLeft(key: string, token: string): Promise<number | null> {
  const score = await suite.admin.zscore(sharedKeys(key)[0], token);
  return score === null ? null : Number(score) - (await serverNow());
}

describe('acquireShared: the line and its places', () => {
  // guard: acquireShared refreshes a caller's place (HSET places) BEFORE promote looks at the line
  it('a waiter whose place lapsed, asking again before anybody swept it, keeps its turn', async () => {
    const key = 'refresh-first';
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect(await acquire(key, 'w1', { placeTtl: 100 })).toEqual([0, expect.any(Number), 1, expect.any(Number)]);
    expect((await acquire(key, 'w2'))[2]).toBe(1);
    await sleep(150); // w1's place has lapsed, nobody has swept it yet
    expect((await acquire(key, 'w1'))[2]).toBe(1); // still waiting (h holds), its place refreshed
    expect(await suite.admin.zrange(sharedKeys(key)[2], '0', '-1')).toEqual(['w1', 'w2']);
    // h's release grants the head: w1, not w2
    expect(await newStore().releaseShared(key, 'h')).toBe(true);
    expect(await leaseLeft(key, 'w1')).not.toBeNull();
    expect(await leaseLeft(key, 'w2')).toBeNull();
  });

  // guard: acquireShared's PEXPIRE of the line and of the places when a waiter takes a place
  it('the line and the places of a new waiter expire (a waiter that dies leaks no key)', async () => {
    const key = 'line-ttl';
    const [, , line, places] = sharedKeys(key);
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect((await acquire(key, 'w', { placeTtl: 1000 }))[2]).toBe(1);
    for (const k of [line, places]) {
      const ttl = await suite.admin.pttl(k);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2000);
    }
  });

  // guard: acquireShared's ZADD holders now + ttl when its own run grants the caller from its place
  it("a waiter granted by its own call holds for its own TTL, not just its place's", async () => {
    const key = 'own-grant-ttl';
    expect((await acquire(key, 'h', { ttl: 100 }))[0]).toBe(1);
    expect((await acquire(key, 'w', { ttl: 30_000, placeTtl: 1000 }))[2]).toBe(1);
    await sleep(150); // h's lease ended: w's next call sweeps it and grants w from its place
    const reply = await acquire(key, 'w', { ttl: 30_000, placeTtl: 1000 });
    expect(reply[0]).toBe(1);
    expect(reply[4]).toBe(1); // by this very run
    expect(await leaseLeft(key, 'w')).toBeGreaterThan(20_000);
    expect(await suite.admin.pttl(sharedKeys(key)[0])).toBeGreaterThan(20_000);
  });

  // guard: acquireShared's final keepHolders(…, grew) for a caller left in line: grants promote
  // made in its run to the waiters ahead of it lengthen the keys' TTL
  it('a waiter granted by the call of a waiter behind it keeps its record for its whole lease', async () => {
    const key = 'granted-by-behind';
    const [holders, permits] = sharedKeys(key);
    expect((await acquire(key, 'h', { ttl: 100 }))[0]).toBe(1);
    expect((await acquire(key, 'w1', { ttl: 30_000 }))[2]).toBe(1);
    expect((await acquire(key, 'w2', { ttl: 30_000 }))[2]).toBe(1);
    await sleep(150); // h's lease ended: w2's call sweeps it and grants w1, w2 stays in line
    expect(await acquire(key, 'w2', { ttl: 30_000 })).toEqual([0, expect.any(Number), 1, expect.any(Number)]);
    expect(await leaseLeft(key, 'w1')).toBeGreaterThan(20_000);
    for (const k of [holders, permits]) expect(await suite.admin.pttl(k)).toBeGreaterThan(20_000);
  });
});

describe('promote: grants from the line', () => {
  // guard: promote's `first ~= caller`: a grant is announced to the waiters granted by another's
  // call, never to the caller itself (its answer says so)
  it("a grant is announced on a waiter's inbox when another's call makes it, not when the waiter's own call does", async () => {
    const key = 'announce';
    const inbox = 'test-inbox';
    const listener = connect(suite.server);
    suite.closers.push(() => listener.disconnect());
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(message));
    await listener.subscribe(inbox);
    // w2 is granted from its place by w1's call, w1 by its own call: only w2 hears of it
    expect((await acquire(key, 'h', { ttl: 100, capacity: 2, weight: 2 }))[0]).toBe(1);
    expect((await acquire(key, 'w1', { capacity: 2, inbox }))[2]).toBe(1);
    expect((await acquire(key, 'w2', { capacity: 2, inbox }))[2]).toBe(1);
    await sleep(150);
    const reply = await acquire(key, 'w1', { capacity: 2, inbox });
    expect(reply[0]).toBe(1);
    expect(reply[4]).toBe(1);
    await sleep(100);
    expect(messages.map((m) => m.split(' ').slice(0, 2).join(' '))).toEqual(['granted w2']);
  });

  // guard: promote's lease of a waiter granted by another's call: now + min(place lapse, ttl)
  it('a waiter granted by a release holds only until its place would have lapsed (a dead waiter keeps no capacity long)', async () => {
    const key = 'grant-lease';
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect((await acquire(key, 'w', { ttl: 60_000, placeTtl: 1000 }))[2]).toBe(1);
    expect(await newStore().releaseShared(key, 'h')).toBe(true);
    const left = await leaseLeft(key, 'w');
    expect(left).not.toBeNull();
    expect(left!).toBeLessThanOrEqual(1000);
  });

  // guard: promote stops at a live head that does not fit ("nobody behind it is granted before")
  it('a release grants nobody behind a head that does not fit yet, even a waiter that would fit', async () => {
    const key = 'head-of-line';
    for (const t of ['h1', 'h2']) expect((await acquire(key, t, { capacity: 2 }))[0]).toBe(1);
    expect((await acquire(key, 'big', { weight: 2, capacity: 2 }))[2]).toBe(1);
    expect((await acquire(key, 'small', { weight: 1, capacity: 2 }))[2]).toBe(1);
    expect(await newStore().releaseShared(key, 'h1')).toBe(true); // 1 free: big (2) does not fit
    expect(await leaseLeft(key, 'small')).toBeNull();
    expect(await suite.admin.zrange(sharedKeys(key)[2], '0', '-1')).toEqual(['big', 'small']);
    expect(await newStore().releaseShared(key, 'h2')).toBe(true); // 2 free: big, and only big
    expect(await leaseLeft(key, 'big')).not.toBeNull();
    expect(await leaseLeft(key, 'small')).toBeNull();
    expect(await suite.admin.hget(sharedKeys(key)[1], 'used')).toBe('2');
  });

  // guard: promote's `lapseAt > now` before granting: a lapsed place is dropped, not granted
  it('a release skips a lapsed place (its waiter is presumed dead) and grants the next live one', async () => {
    const key = 'lapsed-skipped';
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect((await acquire(key, 'dead', { placeTtl: 100 }))[2]).toBe(1);
    expect((await acquire(key, 'live'))[2]).toBe(1);
    await sleep(150);
    expect(await newStore().releaseShared(key, 'h')).toBe(true);
    expect(await leaseLeft(key, 'dead')).toBeNull();
    expect(await leaseLeft(key, 'live')).not.toBeNull();
    expect(await suite.admin.hget(sharedKeys(key)[1], 'used')).toBe('1');
    expect(await suite.admin.zrange(sharedKeys(key)[2], '0', '-1')).toEqual([]);
  });
});

describe('releaseShared and leaveShared', () => {
  // guard: keepHolders writes 'used' when it went down without a grant (a release, nobody waiting)
  it("a release with nobody waiting gives its permits back in 'used' for the next callers", async () => {
    const store = newStore();
    const key = 'release-used';
    for (const t of ['a', 'b']) expect((await store.tryAcquireShared(key, t, 10_000, 1, 2, 'keep')).acquired).toBe(true);
    expect(await store.releaseShared(key, 'a')).toBe(true);
    expect(await suite.admin.hget(sharedKeys(key)[1], 'used')).toBe('1');
    expect((await store.tryAcquireShared(key, 'c', 10_000, 1, 2, 'leave')).acquired).toBe(true);
    expect((await store.tryAcquireShared(key, 'd', 10_000, 1, 2, 'leave')).acquired).toBe(false);
  });

  // guard: leaveShared's leaveSharedLine: a waiter that left is never granted afterwards
  it('a waiter that left is not granted by a later release (its place is gone)', async () => {
    const store = newStore();
    const key = 'left-place';
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect((await acquire(key, 'w'))[2]).toBe(1);
    expect(await store.leaveShared(key, 'w')).toBe(false);
    expect(await suite.admin.exists(sharedKeys(key)[2], sharedKeys(key)[3])).toBe(0);
    expect(await store.releaseShared(key, 'h')).toBe(true);
    expect(await leaseLeft(key, 'w')).toBeNull();
    expect(await suite.admin.exists(sharedKeys(key)[0], sharedKeys(key)[1])).toBe(0);
  });

  // guard: leaveShared's giveBackShared: permits granted to a waiter before it left go back
  it('a waiter that leaves after a grant it did not hear of gives those permits back', async () => {
    const store = newStore();
    const key = 'left-grant';
    expect((await acquire(key, 'h'))[0]).toBe(1);
    expect((await acquire(key, 'w'))[2]).toBe(1);
    expect(await store.releaseShared(key, 'h')).toBe(true); // granted to w, which has not asked again
    expect(await store.leaveShared(key, 'w')).toBe(true);
    expect(await leaseLeft(key, 'w')).toBeNull();
    expect((await store.tryAcquireShared(key, 'x', 10_000, 1, 1, 'leave')).acquired).toBe(true);
  });
});

describe('extendShared', () => {
  // guard: extendShared's `tonumber(endsAt) < now` (a lease that ended, not swept yet)
  it('a lease that ended is not extended, even when no script swept it yet', async () => {
    const store = newStore();
    expect((await store.tryAcquireShared('ended', 'a', 50, 1, 2, 'keep')).acquired).toBe(true);
    // b keeps the keys alive past a's lease, so a's entry is still there when a asks
    expect((await store.tryAcquireShared('ended', 'b', 10_000, 1, 2, 'keep')).acquired).toBe(true);
    await sleep(120);
    expect(await store.extendShared('ended', 'a', 10_000)).toBe('gone');
  });

  // guard: extendShared's HEXISTS of the holder's weight (the permits hash lost alone)
  it('a holder whose weight was lost (permits evicted) is not extended', async () => {
    const store = newStore();
    const [, permits] = sharedKeys('no-weight');
    expect((await store.tryAcquireShared('no-weight', 'a', 10_000, 1, 2, 'keep')).acquired).toBe(true);
    await suite.admin.del(permits);
    expect(await store.extendShared('no-weight', 'a', 10_000)).toBe('gone');
  });

  // guard: extendShared's ZADD XX of the new lease end, and the PEXPIRE of both keys
  it('an extension moves the lease end and keeps both keys alive as long', async () => {
    const store = newStore();
    const [holders, permits] = sharedKeys('extend-ttl');
    expect((await store.tryAcquireShared('extend-ttl', 'a', 300, 1, 2, 'keep')).acquired).toBe(true);
    expect(await store.extendShared('extend-ttl', 'a', 10_000)).toBe('extended');
    expect(await leaseLeft('extend-ttl', 'a')).toBeGreaterThan(9000);
    for (const k of [holders, permits]) expect(await suite.admin.pttl(k)).toBeGreaterThan(9000);
    await sleep(400); // past the first lease: still held
    expect(await store.extendShared('extend-ttl', 'a', 10_000)).toBe('extended');
  });
});

describe('sweepHolders: holders whose lease ended', () => {
  // guard: sweepHolders' HDEL of the ended holder's weight and ZREM of its lease: the two keys agree
  // after every script (repairHolders' O(1) size check relies on it)
  it('an ended holder is swept from both keys by the next script, and the keys agree after it', async () => {
    const store = newStore();
    const key = 'swept';
    const [holders, permits] = sharedKeys(key);
    expect((await store.tryAcquireShared(key, 'gone', 50, 1, 2, 'keep')).acquired).toBe(true);
    expect((await store.tryAcquireShared(key, 'b', 10_000, 1, 2, 'keep')).acquired).toBe(true);
    await sleep(120);
    expect((await store.tryAcquireShared(key, 'c', 10_000, 1, 2, 'leave')).acquired).toBe(true);
    expect((await suite.admin.zrange(holders, '0', '-1')).sort()).toEqual(['b', 'c']);
    expect((await suite.admin.hkeys(permits)).sort()).toEqual(['h:b', 'h:c', 'used']);
    expect(await suite.admin.hget(permits, 'used')).toBe('2');
  });
});

describe('keepHolders: the keys live as long as the last lease', () => {
  // guard: keepHolders' PEXPIRE of holders and permits from the LAST lease end
  it('holders and permits expire with the longest lease, not the first or a shorter one', async () => {
    const store = newStore();
    const [holders, permits] = sharedKeys('keys-ttl');
    expect((await store.tryAcquireShared('keys-ttl', 'long', 10_000, 1, 3, 'keep')).acquired).toBe(true);
    expect((await store.tryAcquireShared('keys-ttl', 'short', 300, 1, 3, 'keep')).acquired).toBe(true);
    for (const k of [holders, permits]) {
      const ttl = await suite.admin.pttl(k);
      expect(ttl).toBeGreaterThan(9000);
      expect(ttl).toBeLessThanOrEqual(10_001);
    }
  });
});
