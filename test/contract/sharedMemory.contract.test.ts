import { MemoryLockStore } from '../../src/index.js';
import { PLACE_TTL, sharedStoreContract } from './sharedStoreContract.js';

sharedStoreContract('MemoryLockStore', async () => {
  let store = new MemoryLockStore({ placeTtl: PLACE_TTL });
  return {
    get store() {
      return store;
    },
    clear: async () => {
      store.close();
      store = new MemoryLockStore({ placeTtl: PLACE_TTL });
    },
    close: async () => store.close(),
  };
});
