/**
 * The behaviour every SharedLockStore (semaphores, read-write locks) must have, run against each
 * backend that offers it (memory, Redis: see shared*.contract.test.ts). Real clocks and TTLs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_MS } from '../../src/options/limits.js';
import type { AcquireResult, LockStore } from '../../src/store/LockStore.js';
import { batchExtendSharedOf, sharedInspectorOf, sharedOf, type SharedLockStore } from '../../src/store/SharedLockStore.js';

export interface SharedStoreUnderTest {
  /** A store whose places last {@link PLACE_TTL} ms. */
  readonly store: LockStore;
  clear(): Promise<void>;
  close(): Promise<void>;
}

/** The place TTL the stores under test are made with. */
export const PLACE_TTL = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let n = 0;
const fresh = (what: string) => `shared:${what}:${++n}`;
const granted = (r: AcquireResult) => r.acquired;
/** A reader's and a writer's weight in a read-write lock of this capacity. */
const RW = 1000;

export function sharedStoreContract(name: string, open: () => Promise<SharedStoreUnderTest>): void {
  describe(`SharedLockStore contract: ${name}`, () => {
    let sut: SharedStoreUnderTest;
    let store: LockStore & SharedLockStore;
    beforeAll(async () => {
      sut = await open();
    });
    afterAll(async () => sut?.close());
    beforeEach(async () => {
      await sut.clear();
      store = sharedOf(sut.store)!;
      expect(store).toBeDefined();
    });

    /** `token` (weight 1 of 1) asks for `key` again every fifth of the place TTL until `stop()`, keeping its place. */
    function keepAsking(key: string, token: string): { stop(): Promise<void> } {
      let last: Promise<unknown> = Promise.resolve();
      const timer = setInterval(() => {
        last = store.tryAcquireShared(key, token, 10_000, 1, 1, 'keep');
      }, PLACE_TTL / 5);
      return {
        stop: async () => {
          clearInterval(timer);
          await last;
        },
      };
    }

    it('grants up to the capacity, queues the rest, and a release grants the first waiter (fences increasing)', async () => {
      const key = fresh('cap');
      const a = await store.tryAcquireShared(key, 'a', 10_000, 1, 2, 'keep');
      const b = await store.tryAcquireShared(key, 'b', 10_000, 1, 2, 'keep');
      const c = await store.tryAcquireShared(key, 'c', 10_000, 1, 2, 'keep');
      expect([a, b].every(granted)).toBe(true);
      expect(c).toMatchObject({ acquired: false, queued: true });
      const holderTtl = (c as { holderTtl?: number }).holderTtl!;
      expect(holderTtl > 9_000 && holderTtl <= 10_000, `holderTtl ${holderTtl}`).toBe(true);
      // asking again while holding: told it holds them, same fence, and what is left of its lease
      const again = await store.tryAcquireShared(key, 'a', 10_000, 1, 2, 'keep');
      expect(again).toMatchObject({ acquired: true, fence: (a as { fence: number }).fence });
      const left = (again as { ttl?: number }).ttl;
      if (left !== undefined) expect(left > 9_000 && left <= 10_000, `ttl ${left}`).toBe(true);
      expect(await store.releaseShared(key, 'a')).toBe(true);
      expect(await store.releaseShared(key, 'a')).toBe(false);
      // the release granted c from its place: its next call is told so
      const c2 = await store.tryAcquireShared(key, 'c', 10_000, 1, 2, 'keep');
      expect(c2).toMatchObject({ acquired: true });
      const fences = [a, b, c2].map((r) => (r as { fence: number }).fence);
      expect(fences[1]).toBeGreaterThan(fences[0]!);
      expect(fences[2]).toBeGreaterThan(fences[1]!);
      expect(await store.tryAcquireShared(key, 'd', 10_000, 1, 2, 'leave')).toMatchObject({ acquired: false });
    });

    it('fence blocks: a grant reserves the fences asked for and says how many; a grant from the line, what the place asked; the next grant is above every block', async () => {
      const key = fresh('blocks');
      const a = await store.tryAcquireShared(key, 'a', 10_000, 1, 1, 'keep', 5);
      expect(a).toMatchObject({ acquired: true, fences: 5 });
      // b waits, asking for 3 fences; a's release grants it from the line with those
      expect(await store.tryAcquireShared(key, 'b', 10_000, 1, 1, 'keep', 3)).toMatchObject({ acquired: false, queued: true });
      expect(await store.releaseShared(key, 'a')).toBe(true);
      const b = await store.tryAcquireShared(key, 'b', 10_000, 1, 1, 'keep', 7);
      expect(b).toMatchObject({ acquired: true, fences: 3 });
      const aFence = (a as { fence: number }).fence;
      const bFence = (b as { fence: number }).fence;
      expect(bFence).toBeGreaterThan(aFence + 4);
      await store.releaseShared(key, 'b');
      // one fence when none is asked for; bad counts refused
      const c = await store.tryAcquireShared(key, 'c', 10_000, 1, 1, 'keep');
      expect((c as { fences?: number }).fences ?? 1).toBe(1);
      expect((c as { fence: number }).fence).toBeGreaterThan(bFence + 2);
      for (const bad of [0, -1, 1.5, Number.NaN]) await expect(store.tryAcquireShared(key, 'd', 10_000, 1, 1, 'keep', bad)).rejects.toThrow(/fences/);
    });

    it('lets exactly `capacity` of many concurrent acquirers in', async () => {
      const key = fresh('race');
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.tryAcquireShared(key, `t${i}`, 10_000, 1, 5, 'leave')));
      expect(results.filter(granted)).toHaveLength(5);
    });

    it('serves the line head first: a 3-permit waiter is not overtaken by 1-permit ones', async () => {
      const key = fresh('fifo');
      expect(granted(await store.tryAcquireShared(key, 'h1', 10_000, 2, 4, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'h2', 10_000, 1, 4, 'keep'))).toBe(true);
      // 1 permit is free: the 3-permit waiter does not fit and waits; a 1-permit one would fit but queues behind
      expect(await store.tryAcquireShared(key, 'big', 10_000, 3, 4, 'keep')).toMatchObject({ acquired: false, queued: true });
      expect(await store.tryAcquireShared(key, 'small', 10_000, 1, 4, 'keep')).toMatchObject({ acquired: false, queued: true });
      await store.releaseShared(key, 'h2'); // 2 free: still not enough for big
      expect(granted(await store.tryAcquireShared(key, 'small', 10_000, 1, 4, 'keep'))).toBe(false);
      await store.releaseShared(key, 'h1'); // 4 free: big (3) then small (1)
      expect(granted(await store.tryAcquireShared(key, 'big', 10_000, 3, 4, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'small', 10_000, 1, 4, 'keep'))).toBe(true);
    });

    it('read-write: readers share, a writer waits for them, and readers after a waiting writer queue behind it', async () => {
      const key = fresh('rw');
      expect(granted(await store.tryAcquireShared(key, 'r1', 10_000, 1, RW, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'r2', 10_000, 1, RW, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'r3', 10_000, 1, RW, 'keep'))).toBe(false);
      await store.releaseShared(key, 'r1');
      await store.releaseShared(key, 'r2');
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'r3', 10_000, 1, RW, 'keep'))).toBe(false);
      await store.releaseShared(key, 'w');
      expect(granted(await store.tryAcquireShared(key, 'r3', 10_000, 1, RW, 'keep'))).toBe(true);
    });

    it("'leave' gives the place up, and the waiters behind that now fit are granted", async () => {
      const key = fresh('leave');
      expect(granted(await store.tryAcquireShared(key, 'r', 10_000, 1, RW, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'r2', 10_000, 1, RW, 'keep'))).toBe(false);
      const left = await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'leave');
      expect(left.acquired).toBe(false);
      expect((left as { queued?: boolean }).queued).toBeFalsy();
      expect(granted(await store.tryAcquireShared(key, 'r2', 10_000, 1, RW, 'keep'))).toBe(true);
    });

    it("a waiter that fits is granted by the call that freed the room — 'leave', a release past an expired holder — not by its own next call", async () => {
      // (the waiter learns it holds the permits when its renewal finds them: extendShared)
      const key = fresh('grantedAtOnce');
      expect(granted(await store.tryAcquireShared(key, 'r', 10_000, 1, RW, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'r2', 10_000, 1, RW, 'keep'))).toBe(false);
      await store.tryAcquireShared(key, 'w', 10_000, RW, RW, 'leave');
      expect(await store.extendShared(key, 'r2', 10_000)).toBe('extended');

      const other = fresh('grantedAtOnce');
      expect(granted(await store.tryAcquireShared(other, 'dies', 50, 1, 2, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(other, 'h', 10_000, 1, 2, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(other, 'both', 10_000, 2, 2, 'keep'))).toBe(false);
      await sleep(80); // 'dies' lease ended; nobody looked at the key since
      expect(await store.releaseShared(other, 'h')).toBe(true);
      expect(await store.extendShared(other, 'both', 10_000)).toBe('extended');
    });

    it('leaveShared gives up the place, and permits granted meanwhile', async () => {
      const key = fresh('leaveShared');
      expect(granted(await store.tryAcquireShared(key, 'a', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'b', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'c', 10_000, 1, 1, 'keep'))).toBe(false);
      await store.releaseShared(key, 'a'); // granted to b, which never asks again
      expect(await store.leaveShared(key, 'b')).toBe(true); // … and gives it up: c is next
      expect(granted(await store.tryAcquireShared(key, 'c', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(await store.leaveShared(key, 'nobody')).toBe(false);
    });

    it('an expired holder frees its permits, and a lapsed place blocks nobody', async () => {
      const key = fresh('expiry');
      expect(granted(await store.tryAcquireShared(key, 'dies', 50, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'gone-waiter', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(await store.extendShared(key, 'gone-waiter', 1_000)).toBe('gone');
      await sleep(PLACE_TTL + 50); // the holder's lease ended, and the waiter's place lapsed
      expect(await store.extendShared(key, 'dies', 1_000)).toBe('gone');
      expect(await store.releaseShared(key, 'dies')).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'next', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'gone-waiter', 10_000, 1, 1, 'leave'))).toBe(false);
    });

    it('extendShared keeps a holder past its first TTL', async () => {
      const key = fresh('extend');
      // (a first TTL with room for a loaded machine: the extend must land before it ends)
      expect(granted(await store.tryAcquireShared(key, 'a', 400, 1, 1, 'keep'))).toBe(true);
      await sleep(40);
      expect(await store.extendShared(key, 'a', 10_000)).toBe('extended');
      await sleep(400);
      expect(granted(await store.tryAcquireShared(key, 'b', 10_000, 1, 1, 'leave'))).toBe(false);
      expect(await store.releaseShared(key, 'a')).toBe(true);
      expect(await store.extendShared(key, 'a', 10_000)).toBe('gone');
    });

    it('each grant is decided by its own capacity: a lower limit waits until enough holders left, nobody is revoked', async () => {
      const key = fresh('limit');
      for (const t of ['a', 'b', 'c']) expect(granted(await store.tryAcquireShared(key, t, 10_000, 1, 3, 'keep'))).toBe(true);
      // a caller with limit 2 while 3 are held: waits; the three holders keep theirs
      expect(granted(await store.tryAcquireShared(key, 'd', 10_000, 1, 2, 'keep'))).toBe(false);
      expect(await store.extendShared(key, 'c', 10_000)).toBe('extended');
      await store.releaseShared(key, 'a');
      expect(granted(await store.tryAcquireShared(key, 'd', 10_000, 1, 2, 'keep'))).toBe(false); // 2 held, limit 2
      await store.releaseShared(key, 'b');
      expect(granted(await store.tryAcquireShared(key, 'd', 10_000, 1, 2, 'keep'))).toBe(true);
      // a higher limit gets in at once
      expect(granted(await store.tryAcquireShared(key, 'e', 10_000, 1, 5, 'keep'))).toBe(true);
    });

    it('refuses a weight that is not a positive integer or exceeds the capacity (such a waiter would block the line for good)', async () => {
      const key = fresh('badWeight');
      for (const [weight, capacity] of [
        [3, 2],
        [0, 2],
        [1.5, 2],
        [Number.NaN, 2],
        [1, Number.NaN],
      ]) {
        await expect(store.tryAcquireShared(key, 'bad', 10_000, weight!, capacity!, 'keep')).rejects.toMatchObject({ name: 'LockOptionsError' });
      }
      // nothing of them is left in line: a fitting caller is granted at once
      expect(granted(await store.tryAcquireShared(key, 'good', 10_000, 1, 2, 'leave'))).toBe(true);
    });

    it('inspectShared: live holders (token, weight, fence, TTL; first to end first), permits used and live waiters, or null', async () => {
      const inspector = sharedInspectorOf(store)!;
      expect(inspector).toBeDefined();
      const key = fresh('inspect');
      expect(await inspector.inspectShared(key)).toBeNull();
      const a = await store.tryAcquireShared(key, 'a', 10_000, 2, 3, 'keep');
      const b = await store.tryAcquireShared(key, 'b', 5_000, 1, 3, 'keep');
      expect(granted(await store.tryAcquireShared(key, 'c', 10_000, 2, 3, 'keep'))).toBe(false);
      const info = await inspector.inspectShared(key);
      expect(info).toMatchObject({
        used: 3,
        waiting: 1,
        holders: [
          { token: 'b', weight: 1, fence: (b as { fence: number }).fence },
          { token: 'a', weight: 2, fence: (a as { fence: number }).fence },
        ],
      });
      expect(info!.holders[0]!.ttl).toBeGreaterThan(4_000);
      expect(info!.holders[0]!.ttl).toBeLessThanOrEqual(5_000);
      expect(info!.holders[1]!.ttl).toBeGreaterThan(9_000);
      // the mutex of that name is not a shared lock
      expect(await inspector.inspectShared(fresh('nothing'))).toBeNull();
      await store.releaseShared(key, 'a'); // grants c
      await store.releaseShared(key, 'b');
      expect(await inspector.inspectShared(key)).toMatchObject({ used: 2, waiting: 0, holders: [{ token: 'c', weight: 2 }] });
      await store.releaseShared(key, 'c');
      expect(await inspector.inspectShared(key)).toBeNull();
    });

    it('inspectShared changes nothing: an ended lease and a lapsed place are not counted, yet nobody is granted by looking', async () => {
      const inspector = sharedInspectorOf(store)!;
      const key = fresh('read-only');
      expect(granted(await store.tryAcquireShared(key, 'short', 60, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'waiter', 10_000, 1, 1, 'keep'))).toBe(false);
      await sleep(100); // the holder's lease ended; the waiter's place (300 ms) lives on
      // the waiter would fit now, but only a store call grants it: looking does not
      expect(await inspector.inspectShared(key)).toEqual({ used: 0, holders: [], waiting: 1 });
      expect(await inspector.inspectShared(key)).toEqual({ used: 0, holders: [], waiting: 1 });
      expect(await store.extendShared(key, 'waiter', 10_000)).toBe('gone');
      await sleep(PLACE_TTL); // and the place lapsed
      expect(await inspector.inspectShared(key)).toBeNull();
    });

    it('extendSharedMany: each holder extended or gone, answered in request order, across keys', async () => {
      const batch = batchExtendSharedOf(store)!;
      expect(batch).toBeDefined();
      const keys = Array.from({ length: 12 }, (_, i) => fresh(`many-${i}`));
      // (a first TTL the 12 grants all fit in on a loaded machine: 100 ms did not, on a Cluster)
      for (const key of keys) expect(granted(await store.tryAcquireShared(key, `t-${key}`, 2000, 1, 2, 'keep'))).toBe(true);
      await store.releaseShared(keys[3]!, `t-${keys[3]}`);
      const outcomes = await batch.extendSharedMany([
        ...keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 10_000 })),
        { key: keys[0]!, token: 'nobody', ttlMs: 10_000 },
      ]);
      expect(outcomes).toEqual([...keys.map((_, i) => (i === 3 ? 'gone' : 'extended')), 'gone']);
      await sleep(2100); // past the first TTL: the extended holders hold on
      const inspector = sharedInspectorOf(store)!;
      for (const [i, key] of keys.entries()) expect((await inspector.inspectShared(key))?.used ?? 0).toBe(i === 3 ? 0 : 1);
      expect(await batch.extendSharedMany([])).toEqual([]);
    });

    it('refuses a TTL that is not an integer from 1 ms to MAX_MS: LockOptionsError, nothing granted or extended', async () => {
      const key = fresh('badTtl');
      const badTtls = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_MS + 1];
      for (const ttl of badTtls) {
        await expect(store.tryAcquireShared(key, 'bad', ttl, 1, 1, 'keep')).rejects.toMatchObject({
          name: 'LockOptionsError',
          message: expect.stringMatching(/ttlMs.*from 1 to/),
        });
      }
      expect(granted(await store.tryAcquireShared(key, 'good', 10_000, 1, 1, 'leave'))).toBe(true);
      for (const ttl of badTtls) await expect(store.extendShared(key, 'good', ttl)).rejects.toMatchObject({ name: 'LockOptionsError' });
      const batch = batchExtendSharedOf(store);
      if (batch !== undefined)
        await expect(batch.extendSharedMany([{ key, token: 'good', ttlMs: Number.NaN }])).rejects.toMatchObject({ name: 'LockOptionsError' });
      // the holder keeps its lease, and gives it back
      expect(granted(await store.tryAcquireShared(key, 'other', 10_000, 1, 1, 'leave'))).toBe(false);
      expect(await store.releaseShared(key, 'good')).toBe(true);
    });

    it('a waiter at the head asking with a capacity that now fits is granted by that call', async () => {
      const key = fresh('higherLimit');
      expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 2, 2, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 2, 'keep'))).toBe(false);
      // (its place said capacity 2; this call says 3: the call's own capacity decides)
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 3, 'keep'))).toBe(true);
    });

    it('a waiter that keeps asking keeps its place past the place TTL: nobody who came later overtakes it', async () => {
      const key = fresh('refresh');
      expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
      const t0 = performance.now();
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 1, 'keep'))).toBe(false);
      const asking = keepAsking(key, 'w');
      await sleep(PLACE_TTL / 2);
      expect(granted(await store.tryAcquireShared(key, 'late', 10_000, 1, 1, 'keep'))).toBe(false);
      // past the lapse of w's first place, before that of late's (a store that did not refresh
      // places has put w back in line behind late by now)
      await sleep(t0 + PLACE_TTL * 1.3 - performance.now());
      await asking.stop();
      expect(await store.releaseShared(key, 'h')).toBe(true);
      expect(await store.extendShared(key, 'w', 10_000)).toBe('extended');
      expect(await store.extendShared(key, 'late', 10_000)).toBe('gone');
    });

    it('a lapsed place at the head blocks nobody: the call that frees the room grants the live waiter behind it', async () => {
      const key = fresh('lapsedHead');
      expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'dead', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'alive', 10_000, 1, 1, 'keep'))).toBe(false);
      const asking = keepAsking(key, 'alive');
      await sleep(PLACE_TTL + 100); // the dead waiter's place lapsed; the live one's did not
      await asking.stop();
      expect(await store.releaseShared(key, 'h')).toBe(true);
      expect(await store.extendShared(key, 'alive', 10_000)).toBe('extended');
      expect(await store.extendShared(key, 'dead', 10_000)).toBe('gone');
    });

    it('a grant made to a waiting place lasts until that place would have lapsed, at most: a waiter that died holds the permits no longer', async () => {
      const inspector = sharedInspectorOf(store)!;
      const key = fresh('placeBound');
      expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(await store.releaseShared(key, 'h')).toBe(true); // grants w from its place
      const info = await inspector.inspectShared(key);
      expect(info?.holders.map((holder) => holder.token)).toEqual(['w']);
      expect(info!.holders[0]!.ttl).toBeLessThanOrEqual(PLACE_TTL);
      // its next call takes the grant and learns what is left of it; an extension makes it whole
      expect(await store.extendShared(key, 'w', 10_000)).toBe('extended');
      expect((await inspector.inspectShared(key))!.holders[0]!.ttl).toBeGreaterThan(9_000);
      expect(await store.releaseShared(key, 'w')).toBe(true);
    });

    it('releaseShared gives back permits only: a waiter keeps its place; leaveShared gives the place up; on an unknown key both answer false', async () => {
      const key = fresh('giveBack');
      expect(await store.releaseShared(fresh('unknown'), 'nobody')).toBe(false);
      expect(await store.leaveShared(fresh('unknown'), 'nobody')).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 'stays', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(granted(await store.tryAcquireShared(key, 'goes', 10_000, 1, 1, 'keep'))).toBe(false);
      expect(await store.releaseShared(key, 'stays')).toBe(false); // it held nothing, and keeps its place
      expect(await store.leaveShared(key, 'goes')).toBe(false); // it held nothing, and leaves the line
      expect(await store.releaseShared(key, 'h')).toBe(true);
      expect(await store.extendShared(key, 'stays', 10_000)).toBe('extended');
      expect(await store.releaseShared(key, 'stays')).toBe(true);
      // the line is empty now: the one that left was not granted
      expect(await store.extendShared(key, 'goes', 10_000)).toBe('gone');
    });

    it('a shared lock and a mutex of the same name are independent', async () => {
      const key = fresh('apart');
      expect(granted(await store.tryAcquire(key, 'm', 10_000))).toBe(true);
      expect(granted(await store.tryAcquireShared(key, 's', 10_000, 1, 1, 'keep'))).toBe(true);
      expect(await store.release(key, 'm')).toBe(true);
      expect(await store.releaseShared(key, 's')).toBe(true);
    });
  });
}
