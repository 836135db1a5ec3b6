/** Reentrant read-write locks on the in-memory store (the suite: test/support/readWriteReentrancy.ts). */
import { MemoryLockStore } from '../../src/index.js';
import { readWriteReentrancySuite } from '../support/readWriteReentrancy.js';

readWriteReentrancySuite('MemoryLockStore', async () => ({ store: new MemoryLockStore(), close: async () => undefined }));
