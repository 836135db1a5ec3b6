import { firstValueFrom } from 'rxjs';
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
