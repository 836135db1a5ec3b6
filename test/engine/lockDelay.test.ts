import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, MemoryLockStore } from '../../src/index.js';
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
