import { MemoryLockStore } from '../../src/index.js';
import { multiKeyContract } from './multiKeyContract.js';

multiKeyContract('MemoryLockStore', async () => {
  const store = new MemoryLockStore();
  return {
    store,
    holderOf: async (storeKey) => store.holder(storeKey) ?? null,
    close: async () => store.close(),
  };
});
