import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, MemoryLockStore, type AcquireResult, type LockStore } from '../../src/index.js';
import { lockDelayContract } from '../contract/lockDelayContract.js';

lockDelayContract('MemoryLockStore', async () => {
  const store = new MemoryLockStore();
  return {
    store,
    holderOf: async (storeKey) => store.holder(storeKey) ?? null,
    pttlOf: async (storeKey) => store.pttl(storeKey),
    close: async () => store.close(),
  };
});

describe('lockDelay option', () => {
  it('is an integer number of ms from 0 to 2147483647', () => {
    for (const bad of [-1, 1.5, '10', 2_147_483_648, Infinity]) {
      let option: string | undefined;
      try {
        createLocker({ lockDelay: bad as number });
      } catch (error) {
        option = isLockOptionsError(error) ? error.option : undefined;
      }
      expect(option, String(bad)).toBe('lockDelay');
    }
    expect(() => createLocker({ lockDelay: 0 })).not.toThrow();
    expect(() => createLocker({ lockDelay: 2_147_483_647 })).not.toThrow();
  });
});

describe('lock-delay and a validity the store measured (a quorum store)', () => {
  it('the validity is shortened by the delay: the lease ends lockDelay before the store would free the key', async () => {
    const memory = new MemoryLockStore();
    // answers as a quorum store does: the TTL it was given, less 2 s it spent (or its drift)
    const quorumLike: LockStore = {
      tryAcquire: (key, token, ttlMs, fences) =>
        memory.tryAcquire(key, token, ttlMs, fences).then((r): AcquireResult => (r.acquired ? { ...r, validity: ttlMs - 2_000 } : r)),
      extend: (key, token, ttlMs) => memory.extend(key, token, ttlMs),
      release: (key, token) => memory.release(key, token),
    };
    const locker = createLocker({ store: quorumLike, ttl: 5_000, lockDelay: 1_000 });
    const lease = await firstValueFrom(locker.acquire('k'));
    const answered = performance.now();
    // the store measured 6,000 − 2,000 for its key; without the delay that leaves 3,000 ms
    expect(lease.validUntil).toBeLessThanOrEqual(answered + 3_000);
    expect(memory.pttl('lock:k')).toBeGreaterThan(5_000);
    await locker.close();
    memory.close();
  });
});

describe('lock-delay and a measured validity that the drift of ttl + lockDelay eats (a quorum store)', () => {
  /** A store answering as RedlockStore does: validity `ttl − (ttl·1% + 2)` for the TTL it was sent (no time spent granting). */
  const redlockLike = () => {
    const memory = new MemoryLockStore();
    const calls = { tryAcquire: 0, extend: 0, release: 0 };
    const store: LockStore = {
      tryAcquire: (key, token, ttlMs, fences) => {
        calls.tryAcquire++;
        return memory.tryAcquire(key, token, ttlMs, fences).then((r): AcquireResult => (r.acquired ? { ...r, validity: ttlMs - (ttlMs * 0.01 + 2) } : r));
      },
      // (a round trip of 20 ms: a renewal must be sent that long before the deadline)
      extend: (key, token, ttlMs) => (calls.extend++, new Promise((resolve) => setTimeout(resolve, 20)).then(() => memory.extend(key, token, ttlMs))),
      release: (key, token) => (calls.release++, memory.release(key, token)),
    };
    return { memory, store, calls };
  };

  it('nothing left after the delay (lockDelay 120 × ttl): the grant is kept, counted on the ttl alone, not given back and taken again until the wait ends', async () => {
    const { memory, store, calls } = redlockLike();
    // the store's drift allowance on 60,500 ms (607 ms) is more than the whole ttl
    const locker = createLocker({ store, ttl: 500, lockDelay: 60_000, waitTimeout: 1_000 });
    const lease = await firstValueFrom(locker.acquire('k'));
    expect(calls).toEqual({ tryAcquire: 1, extend: 0, release: 0 });
    expect(lease.held).toBe(true);
    expect(lease.validUntil - lease.acquiredAt).toBeLessThanOrEqual(500 - (5 + 2));
    expect(memory.pttl('lock:k')).toBeGreaterThan(60_000);
    await lease.release();
    await locker.close();
    memory.close();
  });

  it('less left than the renewal interval (lockDelay 75 × ttl): the lease is renewed before its deadline, not lost at it', async () => {
    const { memory, store, calls } = redlockLike();
    // validity 152,000 − 1,522 − 150,000 = 478 ms, below the 666 ms renewal interval
    const locker = createLocker({ store, ttl: 2_000, lockDelay: 150_000 });
    const outcome = await lastValueFrom(locker.using('k', () => timer(600))).then(
      () => 'done',
      (e: unknown) => e,
    );
    expect(outcome).toBe('done');
    expect(calls.extend).toBeGreaterThanOrEqual(1);
    await locker.close();
    memory.close();
  });
});

describe('lock-delay: a lease lost to its deadline', () => {
  it('is not given back, and its release() says false: the key lapses by itself, lockDelay after', async () => {
    // (LeaseKeeper.release: a lapsed lease under lock-delay sends nothing. The keeper's own answer
    // there, `false`, survives the mutation run made `true`: the lease, lost already, answers
    // release() with `false` whatever the keeper says — this pins what the holder sees)
    const memory = new MemoryLockStore();
    let releases = 0;
    const store: LockStore = {
      tryAcquire: (key, token, ttlMs, fences) => memory.tryAcquire(key, token, ttlMs, fences),
      extend: (key, token, ttlMs) => memory.extend(key, token, ttlMs),
      release: (key, token) => (releases++, memory.release(key, token)),
    };
    const locker = createLocker({ store, ttl: 200, lockDelay: 5_000, renew: false });
    const lease = await firstValueFrom(locker.acquire('k'));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lease.held).toBe(false);
    expect(await lease.release()).toBe(false);
    expect(releases).toBe(0);
    expect(memory.pttl('lock:k')).toBeGreaterThan(0); // still there: it lapses by itself
    await locker.close();
    memory.close();
  });
});

describe('without lock-delay: a lease lost to its deadline', () => {
  // (the counterpart of the above: LockEngine tells its lease keepers whether lock-delay is on)
  it('is given back all the same when its holder releases (harmless if the key is gone or taken)', async () => {
    const memory = new MemoryLockStore();
    const released: string[] = [];
    const store: LockStore = {
      tryAcquire: (key, token, ttlMs, fences) => memory.tryAcquire(key, token, ttlMs, fences),
      extend: (key, token, ttlMs) => memory.extend(key, token, ttlMs),
      release: (key, token) => (released.push(token), memory.release(key, token)),
    };
    const locker = createLocker({ store, ttl: 200, renew: false });
    const lease = await firstValueFrom(locker.acquire('k'));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lease.held).toBe(false);
    expect(await lease.release()).toBe(false);
    expect(released).toEqual([lease.token]);
    await locker.close();
    memory.close();
  });

  it('a semaphore lease too: its permits are given back when its holder releases', async () => {
    const store = new MemoryLockStore();
    const released: string[] = [];
    const releaseShared = store.releaseShared.bind(store);
    store.releaseShared = (key, token) => (released.push(token), releaseShared(key, token));
    const locker = createLocker({ store, ttl: 200, renew: false });
    const lease = await firstValueFrom(locker.acquirePermit('k', { limit: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lease.held).toBe(false);
    await lease.release();
    expect(released).toEqual([lease.token]);
    await locker.close();
    store.close();
  });
});
