/**
 * The store's cache of key layouts: the same keys as computed afresh, per client prefix, and
 * bounded (a process that touches ever new lock keys keeps at most `capacity` layouts).
 */
import { describe, expect, it } from 'vitest';
import { LockKeysCache, lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';

describe('LockKeysCache', () => {
  it('gives the layout lockKeys computes, tagged or not, for its client prefix', () => {
    for (const prefix of ['', 'app:', '{tenant}:']) {
      const cache = new LockKeysCache(prefix);
      for (const key of ['lock:a', 'lock:{user-1}:b', '{x}', 'lock:a']) expect(cache.of(key)).toEqual(lockKeys(key, prefix));
    }
  });

  it('keeps at most its capacity, dropping the oldest, and still answers a dropped key right', () => {
    const cache = new LockKeysCache('p:', 3);
    for (const key of ['a', 'b', 'c', 'd', 'e']) cache.of(key);
    expect(cache.size).toBe(3);
    expect(cache.of('a')).toEqual(lockKeys('a', 'p:'));
    expect(cache.size).toBe(3);
  });
});
