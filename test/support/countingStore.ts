/** A MemoryLockStore that counts its tryAcquire and release calls. */
import { MemoryLockStore } from '../../src/index.js';

export function countingStore(): { store: MemoryLockStore; calls: { tryAcquire: number; release: number } } {
  const store = new MemoryLockStore();
  const calls = { tryAcquire: 0, release: 0 };
  const tryAcquire = store.tryAcquire.bind(store);
  const release = store.release.bind(store);
  store.tryAcquire = (...args) => (calls.tryAcquire++, tryAcquire(...args));
  store.release = (...args) => (calls.release++, release(...args));
  return { store, calls };
}
