/**
 * Lock-delay (`lockDelay`) on a store, real time: a holder that stops renewing keeps its key
 * blocked until `ttl + lockDelay` after the call that last set its TTL; a released key is free at
 * once; and the key's TTL in the store is `ttl + lockDelay` (only `ttl` with `lockDelay: 0`). Run
 * on the in-memory store (test/engine/lockDelay.test.ts) and on Redis (test/redis/lockDelay.test.ts).
 */
import { firstValueFrom, lastValueFrom, NEVER } from 'rxjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, type Locker, type LockerOptions, type LockStore } from '../../src/index.js';
import { RecordingStore } from '../support/recordingStore.js';

export interface LockDelayStoreUnderTest {
  readonly store: LockStore;
  /** The token the store holds for `storeKey`, or null. */
  holderOf(storeKey: string): Promise<string | null>;
  /** The key's remaining TTL in ms (negative when absent). */
  pttlOf(storeKey: string): Promise<number>;
  close(): Promise<void>;
}

let n = 0;

export function lockDelayContract(name: string, open: () => Promise<LockDelayStoreUnderTest>): void {
  describe(`lock-delay: ${name}`, () => {
    let sut: LockDelayStoreUnderTest;
    const lockers: Locker[] = [];
    beforeAll(async () => {
      sut = await open();
      return () => sut.close();
    });
    afterEach(async () => {
      await Promise.all(lockers.splice(0).map((locker) => locker.close()));
    });
    const lockerWith = (options: LockerOptions): Locker => {
      const locker = createLocker({ store: sut.store, ...options });
      lockers.push(locker);
      return locker;
    };
    const fresh = (what: string) => `delay:${what}:${++n}`;

    it('a holder that stops renewing: its stream loses the lease at its deadline, but the key stays blocked until ttl + lockDelay after its grant was sent', async () => {
      const key = fresh('stalled');
      const ttl = 200;
      // (long enough that a loaded machine, whose process may not run for a few hundred ms around
      // the holder's deadline, still finds the key blocked once it hears of the loss)
      const lockDelay = 1_000;
      const recorded = new RecordingStore(sut.store);
      const holder = createLocker({ store: recorded, ttl, lockDelay, renew: false });
      lockers.push(holder);
      const holding = lastValueFrom(holder.using(key, () => NEVER)).catch((e: unknown) => e);
      const contender = lockerWith({ waitTimeout: 10_000, retry: { minDelay: 5, jitter: 5 } });
      const taken = (async () => {
        // (subscribed once the holder has the key)
        while ((await sut.holderOf(`lock:${key}`)) === null) await new Promise((resolve) => setTimeout(resolve, 2));
        const lease = await firstValueFrom(contender.acquire(key));
        const at = performance.now();
        await lease.release();
        return at;
      })();
      const lost = await holding;
      expect(isLockLostError(lost) && lost.reason).toBe('expired');
      const holderToken = (lost as { token: string }).token;
      // lost, not released: the key is still the stalled holder's in the store
      expect(await sut.holderOf(`lock:${key}`)).toBe(holderToken);
      const grantSent = recorded.calls.find((c) => c.op === 'tryAcquire')!.at;
      const takenAt = await taken;
      // (1 ms for the store clock's millisecond resolution)
      expect(takenAt - grantSent).toBeGreaterThanOrEqual(ttl + lockDelay - 1);
      expect(recorded.calls.filter((c) => c.op === 'release')).toEqual([]);
    });

    it('a released key is free at once, whatever the lock-delay', async () => {
      const key = fresh('released');
      const lease = await firstValueFrom(lockerWith({ lockDelay: 60_000 }).acquire(key));
      expect(await lease.release()).toBe(true);
      expect(await sut.holderOf(`lock:${key}`)).toBeNull();
      const next = await firstValueFrom(lockerWith({ waitTimeout: 0 }).acquire(key));
      expect(next.held).toBe(true);
      await next.release();
    });

    it('a write lock whose holder stops renewing keeps its key blocked until ttl + lockDelay after its grant was sent (shared locks too)', async () => {
      const key = fresh('writer');
      const ttl = 200;
      const lockDelay = 400;
      const holder = lockerWith({ ttl, lockDelay, renew: false });
      const contender = lockerWith({ waitTimeout: 10_000, retry: { minDelay: 5, jitter: 5 } });
      // (the grant is sent after this)
      const subscribedAt = performance.now();
      let held!: () => void;
      const granted = new Promise<void>((resolve) => (held = resolve));
      const holding = lastValueFrom(holder.usingWriteLock(key, () => (held(), NEVER))).catch((e: unknown) => e);
      await granted;
      const lease = await firstValueFrom(contender.acquireWriteLock(key));
      const takenAt = performance.now();
      const lost = await holding;
      expect(isLockLostError(lost) && lost.reason).toBe('expired');
      // (1 ms for the store clock's millisecond resolution)
      expect(takenAt - subscribedAt).toBeGreaterThanOrEqual(ttl + lockDelay - 1);
      await lease.release();
    });

    it('a released permit is free at once, whatever the lock-delay', async () => {
      const key = fresh('permit');
      const lease = await firstValueFrom(lockerWith({ lockDelay: 60_000 }).acquirePermit(key, { limit: 1 }));
      expect(await lease.release()).toBe(true);
      const next = await firstValueFrom(lockerWith({ waitTimeout: 0 }).acquirePermit(key, { limit: 1 }));
      expect(next.held).toBe(true);
      await next.release();
    });

    it('the store keeps the key for ttl + lockDelay (grant and renewal) while the lease counts ttl; with lockDelay 0, for ttl', async () => {
      const [plainKey, delayedKey] = [fresh('plain'), fresh('delayed')];
      const plain = await firstValueFrom(lockerWith({ ttl: 1_000 }).acquire(plainKey));
      const delayed = await firstValueFrom(lockerWith({ ttl: 1_000, lockDelay: 2_000 }).acquire(delayedKey));
      expect(await sut.pttlOf(`lock:${plainKey}`)).toBeLessThanOrEqual(1_000);
      expect(await sut.pttlOf(`lock:${delayedKey}`)).toBeGreaterThan(1_000);
      expect(delayed.ttl).toBe(1_000);
      expect(delayed.validUntil - delayed.acquiredAt).toBeLessThan(1_000);
      expect(await delayed.extend(500)).toBe(true);
      const renewed = await sut.pttlOf(`lock:${delayedKey}`);
      expect(renewed).toBeGreaterThan(500);
      expect(renewed).toBeLessThanOrEqual(2_500);
      expect(delayed.ttl).toBe(500);
      await Promise.all([plain.release(), delayed.release()]);
    });
  });
}
