/**
 * Attack: a Redis that loses one of a shared lock's keys and not the others — what eviction under
 * `maxmemory` (allkeys-lru, volatile-lru: every key here has a TTL) does, one key at a time. Each
 * test deletes one key by hand, the deterministic stand-in for the eviction of that key, then
 * checks the lock stays usable at its full capacity:
 * - the holders zset lost, the permits hash kept: the weights of holders nobody knows any more must
 *   not keep counting against the limit (they did, for as long as anybody held the lock), and a
 *   waiter that was granted from its place must get an answer (its next call failed with a Lua
 *   error: no lease end to count from);
 * - the line lost, the places kept: places of tokens no longer in line must go (they stayed as
 *   long as waiters kept the places key alive).
 */
import { describe, expect, it } from 'vitest';
import { sharedKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { RedisLockStore } from '../../src/redis.js';
import type { AcquireResult } from '../../src/store/LockStore.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

function newStore(): RedisLockStore {
  const client = connect(suite.server);
  const store = new RedisLockStore(client);
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
  );
  return store;
}

const granted = (r: AcquireResult) => r.acquired;

describe('the holders zset lost, the permits hash kept', () => {
  it('the lost holders no longer count: new holders get the whole limit, while others hold all along', async () => {
    const store = newStore();
    const key = 'lost-holders';
    const [holders] = sharedKeys(key);
    for (const t of ['a', 'b']) expect(granted(await store.tryAcquireShared(key, t, 10_000, 1, 3, 'keep'))).toBe(true);
    await suite.admin.del(holders);
    // a and b are forgotten: their renewal says so
    expect(await store.extendShared(key, 'a', 10_000)).toBe('gone');
    // so the whole limit is free — and stays so while holders come and go (the lock is never idle)
    for (const t of ['c', 'd', 'e']) expect(granted(await store.tryAcquireShared(key, t, 10_000, 1, 3, 'leave'))).toBe(true);
    expect(granted(await store.tryAcquireShared(key, 'f', 10_000, 1, 3, 'leave'))).toBe(false);
    expect(await store.releaseShared(key, 'c')).toBe(true);
    expect(granted(await store.tryAcquireShared(key, 'g', 10_000, 1, 3, 'leave'))).toBe(true);
    expect(await suite.admin.hget(sharedKeys(key)[1], 'used')).toBe('3');
  });

  it('a waiter granted from its place meanwhile is answered (not a script error), and the key is usable', async () => {
    const store = newStore();
    const key = 'lost-grant';
    const [holders] = sharedKeys(key);
    expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
    expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 1, 'keep'))).toBe(false);
    expect(await store.releaseShared(key, 'h')).toBe(true); // granted to w, which has not asked again
    await suite.admin.del(holders);
    // w's grant went with the data: it asks again and is granted anew (nobody else holds anything)
    expect(granted(await store.tryAcquireShared(key, 'w', 10_000, 1, 1, 'keep'))).toBe(true);
    expect(await store.releaseShared(key, 'w')).toBe(true);
    expect(await suite.admin.keys('*shared-holders*')).toEqual([]);
  });
});

describe('the permits hash lost, the holders zset kept', () => {
  it('holders without a weight are dropped at once: they hold nothing, and nothing is left once the others leave', async () => {
    const store = newStore();
    const key = 'lost-permits';
    const [holders, permits] = sharedKeys(key);
    for (const t of ['a', 'b']) expect(granted(await store.tryAcquireShared(key, t, 10_000, 1, 2, 'keep'))).toBe(true);
    await suite.admin.del(permits);
    expect(granted(await store.tryAcquireShared(key, 'c', 10_000, 1, 2, 'keep'))).toBe(true);
    expect(await suite.admin.zrange(holders, '0', '-1')).toEqual(['c']);
    expect(await store.releaseShared(key, 'c')).toBe(true);
    expect(await suite.admin.keys('*shared-holders*')).toEqual([]);
  });
});

describe('the line lost, the places kept', () => {
  it('the places of tokens no longer in line are dropped, while other waiters keep the places key alive', async () => {
    const store = newStore();
    const key = 'lost-line';
    const [, , line, places] = sharedKeys(key);
    expect(granted(await store.tryAcquireShared(key, 'h', 10_000, 1, 1, 'keep'))).toBe(true);
    for (const t of ['w1', 'w2']) expect(granted(await store.tryAcquireShared(key, t, 10_000, 1, 1, 'keep'))).toBe(false);
    await suite.admin.del(line);
    // another waiter queues (and keeps the places key alive): only its own place is left
    expect(await store.tryAcquireShared(key, 'w3', 10_000, 1, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
    expect(await suite.admin.hkeys(places)).toEqual(['w3']);
    expect(await suite.admin.zrange(line, '0', '-1')).toEqual(['w3']);
  });
});
