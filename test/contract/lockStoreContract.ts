/**
 * The behaviour every LockStore must have, run against each backend (see *.contract.test.ts).
 * Times are real: stores are tested with their real clocks and TTLs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FENCE_STRIDE, type LockStore } from '../../src/store/LockStore.js';

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

export function lockStoreContract(name: string, open: () => Promise<StoreUnderTest>): void {
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
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      // set-if-absent: even the holder's own token does not take it twice
      expect(await store.tryAcquire(key, 'a', 10_000)).toMatchObject({ acquired: false });
      expect(await sut.countKeys()).toBe(1);
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
      await store.tryAcquire(key, 'a', 60);
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      await sleep(120);
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    });

    it('never lets an expired owner delete the next holder\'s key', async () => {
      const key = fresh('late-release');
      await store.tryAcquire(key, 'old', 40);
      await sleep(90);
      await store.tryAcquire(key, 'new', 10_000);
      expect(await store.release(key, 'old')).toBe(false);
      expect(await store.extend(key, 'old', 10_000)).toBe('taken');
      expect(await store.tryAcquire(key, 'third', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'new')).toBe(true);
    });

    it('extends the TTL only for the owner', async () => {
      const key = fresh('extend');
      await store.tryAcquire(key, 'a', 80);
      expect(await store.extend(key, 'b', 10_000)).toBe('taken');
      expect(await store.extend(key, 'a', 400)).toBe('extended');
      await sleep(160);
      // still held thanks to the extension
      expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'a')).toBe(true);
    });

    it('issues a fence with every grant, strictly greater than every earlier fence of the key', async () => {
      const key = fresh('fence');
      const fences: number[] = [];
      for (let i = 0; i < 10; i++) {
        const result = await store.tryAcquire(key, `t${i}`, i === 5 ? 30 : 10_000);
        if (!result.acquired) throw new Error(`attempt ${i} was refused`);
        expect(Number.isSafeInteger(result.fence)).toBe(true);
        fences.push(result.fence);
        if (i === 5) await sleep(80); // this one expires instead of being released
        else await store.release(key, `t${i}`);
      }
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
      // a refused attempt issues nothing
      await store.tryAcquire(key, 'holder', 10_000);
      expect(await store.tryAcquire(key, 'refused', 10_000)).toMatchObject({ acquired: false });
      await store.release(key, 'holder');
      const next = await store.tryAcquire(key, 'next', 10_000);
      expect(next.acquired && next.fence).toBe(fences[9]! + 2 * FENCE_STRIDE);
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
      if (store.extendMany === undefined) return;
      const [mine, gone, theirs] = [fresh('many-mine'), fresh('many-gone'), fresh('many-theirs')];
      await store.tryAcquire(mine, 'a', 80);
      await store.tryAcquire(theirs, 'b', 10_000);
      const outcomes = await store.extendMany([
        { key: mine, token: 'a', ttlMs: 400 },
        { key: gone, token: 'a', ttlMs: 400 },
        { key: theirs, token: 'a', ttlMs: 400 },
      ]);
      expect(outcomes).toEqual(['extended', 'gone', 'taken']);
      await sleep(160);
      expect(await store.tryAcquire(mine, 'c', 10_000)).toMatchObject({ acquired: false });
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
