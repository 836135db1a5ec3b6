/**
 * The behaviour every LockStore must have, run against each backend (see *.contract.test.ts).
 * Times are real: stores are tested with their real clocks and TTLs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { batchExtendOf, inspectorOf, queueingOf } from '../../src/store/capabilities.js';
import { MAX_MS } from '../../src/options/limits.js';
import type { LockStore } from '../../src/store/LockStore.js';

export interface StoreUnderTest {
  store: LockStore;
  /** How many lock keys the backend holds now. */
  countKeys(): Promise<number>;
  /** Forget every key (between tests). */
  clear(): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let n = 0;
const fresh = (what: string) => `contract:${what}:${++n}`;

/** How the contract runs on a store. */
export interface ContractOptions {
  /**
   * Factor for the short TTLs and the sleeps around them (1 by default): a store whose every call
   * takes several round trips (a quorum of nodes) refuses a grant whose TTL is spent before it is
   * answered, which a loaded machine can make happen with a TTL of tens of milliseconds.
   */
  readonly timeScale?: number;
}

export function lockStoreContract(name: string, open: () => Promise<StoreUnderTest>, { timeScale = 1 }: ContractOptions = {}): void {
  const ms = (n: number) => n * timeScale;
  describe(`LockStore contract: ${name}`, () => {
    let sut: StoreUnderTest;
    let store: LockStore;
    beforeAll(async () => {
      sut = await open();
    });
    afterAll(async () => sut?.close());
    beforeEach(async () => {
      await sut.clear();
      store = sut.store;
    });

    it('grants a free key to the first token and refuses every other', async () => {
      const key = fresh('free');
      expect(await store.tryAcquire(key, 'a', 10_000)).toMatchObject({ acquired: true });
      const refused = await store.tryAcquire(key, 'b', 10_000);
      expect(refused).toMatchObject({ acquired: false });
      // how long the holder has left, when the store says: at most its TTL, and most of it still
      const holderTtl = (refused as { holderTtl?: number }).holderTtl;
      if (holderTtl !== undefined) expect(holderTtl > 5_000 && holderTtl <= 10_000, `holderTtl ${holderTtl}`).toBe(true);
      // the holder's own token asking again (a call the client sent twice) is told the key is its
      const again = await store.tryAcquire(key, 'a', 10_000);
      expect(again).toMatchObject({ acquired: true });
      const left = (again as { ttl?: number }).ttl;
      if (left !== undefined) expect(left > 5_000 && left <= 10_000, `ttl ${left}`).toBe(true);
      expect(await sut.countKeys()).toBe(1);
      expect(await store.release(key, 'a')).toBe(true);
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    });

    it('refuses a TTL that is not an integer from 1 ms to MAX_MS, and a fence count that is not a positive integer: LockOptionsError, nothing granted or changed', async () => {
      const key = fresh('badArguments');
      const badTtls = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_MS + 1];
      for (const ttl of badTtls)
        await expect(store.tryAcquire(key, 'bad', ttl)).rejects.toMatchObject({ name: 'LockOptionsError', message: expect.stringMatching(/ttlMs.*from 1 to/) });
      for (const fences of [0, -1, 1.5, Number.NaN]) {
        await expect(store.tryAcquire(key, 'bad', 10_000, fences)).rejects.toMatchObject({
          name: 'LockOptionsError',
          message: expect.stringMatching(/fences.*from 1/),
        });
      }
      // none of them took the key
      expect(await store.tryAcquire(key, 'good', 10_000)).toMatchObject({ acquired: true });
      for (const ttl of badTtls) await expect(store.extend(key, 'good', ttl)).rejects.toMatchObject({ name: 'LockOptionsError' });
      // nor cut the holder's TTL (a PEXPIRE of 0 or less deletes a Redis key)
      expect(await store.tryAcquire(key, 'other', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'good')).toBe(true);
    });

    it('lets exactly one of many concurrent acquirers win', async () => {
      const key = fresh('race');
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.tryAcquire(key, `t${i}`, 10_000)));
      expect(results.filter((r) => r.acquired)).toHaveLength(1);
    });

    it('releases only for the owner token', async () => {
      const key = fresh('owner');
      await store.tryAcquire(key, 'a', 10_000);
      expect(await store.release(key, 'b')).toBe(false);
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'a')).toBe(true);
      expect(await store.release(key, 'a')).toBe(false);
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    });

    it('answers false when releasing or extending a key that is absent', async () => {
      const key = fresh('absent');
      expect(await store.release(key, 'a')).toBe(false);
      expect(await store.extend(key, 'a', 1000)).toBe('gone');
      expect(await sut.countKeys()).toBe(0);
    });

    it('expires a key after its TTL, after which another token can take it', async () => {
      const key = fresh('ttl');
      await store.tryAcquire(key, 'a', ms(60));
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      await sleep(ms(120));
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    });

    it("never lets an expired owner delete the next holder's key", async () => {
      const key = fresh('late-release');
      await store.tryAcquire(key, 'old', ms(40));
      await sleep(ms(90));
      await store.tryAcquire(key, 'new', 10_000);
      expect(await store.release(key, 'old')).toBe(false);
      expect(await store.extend(key, 'old', 10_000)).toBe('taken');
      expect(await store.tryAcquire(key, 'third', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'new')).toBe(true);
    });

    it('extends the TTL only for the owner', async () => {
      const key = fresh('extend');
      await store.tryAcquire(key, 'a', ms(80));
      expect(await store.extend(key, 'b', 10_000)).toBe('taken');
      expect(await store.extend(key, 'a', ms(400))).toBe('extended');
      await sleep(ms(160));
      // still held thanks to the extension
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'a')).toBe(true);
    });

    it('issues a fence with every grant, strictly greater than every earlier fence of the key', async () => {
      const key = fresh('fence');
      const fences: number[] = [];
      for (let i = 0; i < 10; i++) {
        const result = await store.tryAcquire(key, `t${i}`, i === 5 ? ms(30) : 10_000);
        if (!result.acquired) throw new Error(`attempt ${i} was refused`);
        expect(Number.isSafeInteger(result.fence)).toBe(true);
        fences.push(result.fence);
        if (i === 5)
          await sleep(ms(80)); // this one expires instead of being released
        else await store.release(key, `t${i}`);
      }
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
    });

    it('reserves up to the fences asked for (saying how many when fewer): the next grant starts above the whole block', async () => {
      const key = fresh('fence-block');
      let previousEnd = 0;
      for (const n of [1, 5, 300, 1, 1024, 2]) {
        const result = await store.tryAcquire(key, `t${n}`, 10_000, n);
        if (!result.acquired) throw new Error('refused');
        const reserved = result.fences ?? n;
        expect(reserved).toBeGreaterThanOrEqual(1);
        expect(reserved).toBeLessThanOrEqual(n);
        expect(Number.isSafeInteger(result.fence + reserved - 1)).toBe(true);
        expect(result.fence).toBeGreaterThan(previousEnd);
        previousEnd = result.fence + reserved - 1;
        await store.release(key, `t${n}`);
        await sleep(2); // room on a clock-bound store
      }
      // a refused attempt reserves nothing it could hand out
      await store.tryAcquire(key, 'holder', 10_000, 3);
      expect(await store.tryAcquire(key, 'refused', 10_000, 500)).toMatchObject({ acquired: false });
      await store.release(key, 'holder');
    });

    it('a release that says what its grant reserved, right before the next grant: that grant starts above the whole block', async () => {
      const key = fresh('fence-said');
      let previousEnd = 0;
      for (const n of [1024, 16, 1024, 1]) {
        const result = await store.tryAcquire(key, `s${n}`, 10_000, n);
        if (!result.acquired) throw new Error('refused');
        expect(result.fence).toBeGreaterThan(previousEnd);
        previousEnd = result.fence + (result.fences ?? n) - 1;
        // no pause: the release and the next grant come as fast as the store answers
        expect(await store.release(key, `s${n}`, { fence: result.fence, fences: result.fences ?? n, answeredAt: performance.now() })).toBe(true);
      }
    });

    it('concurrent grants of one key over time get distinct, growing fences', async () => {
      const key = fresh('fence-race');
      const seen: number[] = [];
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; i < 20; i++) {
            const token = `w${w}-${i}`;
            const result = await store.tryAcquire(key, token, 10_000);
            if (result.acquired) {
              seen.push(result.fence);
              await store.release(key, token);
            }
          }
        }),
      );
      expect(seen.length).toBeGreaterThan(0);
      // grants are serialised by the key, and were recorded in grant order
      for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]!);
    });

    it('extendMany, when offered, answers each lease in order, as extend would', async () => {
      const batch = batchExtendOf(store);
      if (batch === undefined) return;
      const [mine, gone, theirs] = [fresh('many-mine'), fresh('many-gone'), fresh('many-theirs')];
      await store.tryAcquire(mine, 'a', ms(80));
      await store.tryAcquire(theirs, 'b', 10_000);
      const outcomes = await batch.extendMany([
        { key: mine, token: 'a', ttlMs: ms(400) },
        { key: gone, token: 'a', ttlMs: ms(400) },
        { key: theirs, token: 'a', ttlMs: ms(400) },
      ]);
      expect(outcomes).toEqual(['extended', 'gone', 'taken']);
      await sleep(ms(160));
      expect(await store.tryAcquire(mine, 'c', 10_000)).toMatchObject({ acquired: false });
    });

    describe('with a line (QueueingStore), when offered', () => {
      const line = () => queueingOf(store);

      it("keeps a waiter's place and hands the key to it on release, with the fences its place asked for", async () => {
        const q = line();
        if (q === undefined) return;
        const key = fresh('line');
        const first = await q.tryAcquireInLine(key, 'holder', 10_000, 1, 'keep');
        expect(first.acquired).toBe(true);
        expect(await q.tryAcquireInLine(key, 'w1', 5_000, 7, 'keep')).toMatchObject({ acquired: false, queued: true });
        expect(await q.tryAcquireInLine(key, 'w2', 5_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
        // a newcomer outside the line does not jump it once the key is free
        expect(await store.release(key, 'holder')).toBe(true);
        expect(await store.tryAcquire(key, 'newcomer', 10_000)).toMatchObject({ acquired: false });
        const granted = await q.tryAcquireInLine(key, 'w1', 5_000, 7, 'keep');
        if (!granted.acquired || !first.acquired) throw new Error('w1 was not handed the key');
        const handed = granted.fences ?? 7;
        expect(handed).toBeGreaterThanOrEqual(1);
        expect(handed).toBeLessThanOrEqual(7); // what its place asked for, or fewer
        expect(granted.fence).toBeGreaterThan(first.fence);
        // the grant's TTL is the waiter's own at most
        expect(granted.ttl ?? 5_000).toBeLessThanOrEqual(5_000);
        expect(await store.release(key, 'w1')).toBe(true);
        const second = await q.tryAcquireInLine(key, 'w2', 5_000, 1, 'keep');
        if (!second.acquired) throw new Error('w2 was not handed the key');
        expect(second.fence).toBeGreaterThanOrEqual(granted.fence + handed);
        expect(await store.release(key, 'w2')).toBe(true);
        expect(await sut.countKeys()).toBe(0);
      });

      it('leave gives up the place; a waiter that left is never handed the key', async () => {
        const q = line();
        if (q === undefined) return;
        const key = fresh('leave');
        await q.tryAcquireInLine(key, 'holder', 10_000, 1, 'keep');
        await q.tryAcquireInLine(key, 'gone', 10_000, 1, 'keep');
        expect(await q.leave(key, 'gone')).toEqual({ granted: false });
        expect(await store.release(key, 'holder')).toBe(true);
        expect(await store.tryAcquire(key, 'anyone', 10_000)).toMatchObject({ acquired: true });
      });

      it("leave tells a waiter that the key was handed to it meanwhile, with the grant's fences", async () => {
        const q = line();
        if (q === undefined) return;
        const key = fresh('leave-granted');
        await q.tryAcquireInLine(key, 'holder', 10_000, 1, 'keep');
        await q.tryAcquireInLine(key, 'waiter', 10_000, 4, 'keep');
        await store.release(key, 'holder');
        const left = await q.leave(key, 'waiter');
        expect(left).toMatchObject({ granted: true });
        expect(left.granted && left.fences).toBeGreaterThanOrEqual(1);
        expect(left.granted && left.fences).toBeLessThanOrEqual(4);
        expect(await store.release(key, 'waiter')).toBe(true);
      });

      it("the last attempt ('leave') takes a key handed over just before it, and otherwise leaves the line", async () => {
        const q = line();
        if (q === undefined) return;
        const key = fresh('last-attempt');
        await q.tryAcquireInLine(key, 'holder', 10_000, 1, 'keep');
        await q.tryAcquireInLine(key, 'a', 10_000, 1, 'keep');
        await q.tryAcquireInLine(key, 'b', 10_000, 1, 'keep');
        // b's last attempt while held: out of line, refused
        const last = await q.tryAcquireInLine(key, 'b', 10_000, 1, 'leave');
        expect(last.acquired).toBe(false);
        expect(!last.acquired && last.queued).toBeFalsy();
        await store.release(key, 'holder'); // hands the key to a
        expect(await q.tryAcquireInLine(key, 'a', 10_000, 1, 'leave')).toMatchObject({ acquired: true });
        await store.release(key, 'a'); // nobody left in line: deleted, not handed to b
        expect(await store.tryAcquire(key, 'c', 10_000)).toMatchObject({ acquired: true });
      });
    });

    describe('inspect (InspectableStore), when offered', () => {
      it('names the holder and its remaining TTL, null when free or expired, and changes nothing', async () => {
        const inspector = inspectorOf(store);
        if (inspector === undefined) return;
        const key = fresh('inspect');
        expect(await inspector.inspect(key)).toBeNull();
        const granted = await store.tryAcquire(key, 'holder', 5_000);
        const info = await inspector.inspect(key);
        expect(info).toMatchObject({ token: 'holder', waiting: 0 });
        expect(info!.ttl).toBeGreaterThan(0);
        expect(info!.ttl).toBeLessThanOrEqual(5_000);
        // the fence, when the store says it, is the grant's
        if (info!.fence !== undefined && granted.acquired) expect(info!.fence).toBe(granted.fence);
        expect(await sut.countKeys()).toBe(1);
        expect(await store.release(key, 'holder')).toBe(true);
        expect(await inspector.inspect(key)).toBeNull();
        await store.tryAcquire(key, 'short', 50);
        await sleep(120);
        expect(await inspector.inspect(key)).toBeNull();
      });

      it('counts the live waiters in the line, and names the fence of a key handed over from it', async () => {
        const inspector = inspectorOf(store);
        const q = queueingOf(store);
        if (inspector === undefined || q === undefined) return;
        const key = fresh('inspect-line');
        await q.tryAcquireInLine(key, 'holder', 10_000, 1, 'keep');
        await q.tryAcquireInLine(key, 'w1', 10_000, 3, 'keep');
        await q.tryAcquireInLine(key, 'w2', 10_000, 1, 'keep');
        expect(await inspector.inspect(key)).toMatchObject({ token: 'holder', waiting: 2 });
        await store.release(key, 'holder'); // hands it to w1
        const info = await inspector.inspect(key);
        expect(info).toMatchObject({ token: 'w1', waiting: 1 });
        const claimed = await q.tryAcquireInLine(key, 'w1', 10_000, 3, 'keep');
        if (!claimed.acquired) throw new Error('w1 was not handed the key');
        expect(info!.fence).toBe(claimed.fence);
        await q.leave(key, 'w2');
        expect(await inspector.inspect(key)).toMatchObject({ token: 'w1', waiting: 0 });
      });
    });

    it('keeps keys independent of each other', async () => {
      const keys = Array.from({ length: 20 }, () => fresh('many'));
      const results = await Promise.all(keys.map((key) => store.tryAcquire(key, 'same-token', 10_000)));
      expect(results.every((r) => r.acquired)).toBe(true);
      expect(await sut.countKeys()).toBe(20);
      await Promise.all(keys.map((key) => store.release(key, 'same-token')));
      expect(await sut.countKeys()).toBe(0);
    });
  });
}
