import { MemoryLockStore } from '../../src/index.js';
import { lockStoreContract } from './lockStoreContract.js';

lockStoreContract('MemoryLockStore', async () => {
  let store = new MemoryLockStore();
  return {
    get store() {
      return store;
    },
    countKeys: async () => store.size,
    clear: async () => {
      store = new MemoryLockStore();
    },
    close: async () => undefined,
  };
});
