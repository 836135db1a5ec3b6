/**
 * Shared locks (permits, read and write locks) granted by an answer that arrives after the lease's
 * validity has passed — a store slower than the TTL. As for a mutex (KeyGate.won), the grant is
 * not handed out lost already: the permits are given back and asked for again, until the wait is
 * over. The store here is the in-memory one behind a controllable answer delay; the same on real
 * Redis behind a slow link is in test/redis/permitSlowLink.test.ts.
 */
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type LockEvent, type Locker, type LockStore } from '../../src/index.js';
import type { SharedLockStore } from '../../src/store/SharedLockStore.js';
import { sleep } from '../support/timing.js';

const opened: Locker[] = [];
afterEach(async () => {
  for (const locker of opened.splice(0)) await locker.close();
});

/** The in-memory store whose `tryAcquireShared` answers come `delay.ms` late (after it ran). */
function slowShared() {
  const memory = new MemoryLockStore();
  const delay = { ms: 0 };
  const calls: string[] = [];
  const store: LockStore & SharedLockStore = {
    tryAcquire: (key, token, ttl) => memory.tryAcquire(key, token, ttl),
    extend: (key, token, ttl) => memory.extend(key, token, ttl),
    release: (key, token) => memory.release(key, token),
    tryAcquireShared: async (key, token, ttl, weight, capacity, place) => {
      calls.push('acquire');
      const answer = await memory.tryAcquireShared(key, token, ttl, weight, capacity, place);
      if (delay.ms > 0) await sleep(delay.ms);
      return answer;
    },
    extendShared: (key, token, ttl) => memory.extendShared(key, token, ttl),
    releaseShared: (key, token) => (calls.push('release'), memory.releaseShared(key, token)),
    leaveShared: (key, token) => (calls.push('leave'), memory.leaveShared(key, token)),
  };
  return { memory, store, delay, calls };
}

function newLocker(store: LockStore) {
  const locker = createLocker({ store, keyPrefix: '', ttl: 100, retry: { minDelay: 1, jitter: 2 } });
  opened.push(locker);
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  return { locker, events };
}

describe('a shared grant answered after its validity', () => {
  it('is given back and asked for again: the work runs on a valid lease, nothing is lost or kept', async () => {
    for (const take of ['permit', 'read', 'write'] as const) {
      const { memory, store, delay, calls } = slowShared();
      const { locker, events } = newLocker(store);
      delay.ms = 150; // the first answer comes after the 97 ms validity of a 100 ms TTL
      const run = lastValueFrom(
        take === 'permit'
          ? locker.usingPermit('late', (lease) => of(lease.validUntil - performance.now()), { limit: 2, waitTimeout: 2_000 })
          : take === 'read'
            ? locker.usingReadLock('late', (lease) => of(lease.validUntil - performance.now()), { waitTimeout: 2_000 })
            : locker.usingWriteLock('late', (lease) => of(lease.validUntil - performance.now()), { waitTimeout: 2_000 }),
      );
      await sleep(20);
      delay.ms = 0; // later answers are quick
      const validityLeft = await run;
      expect(validityLeft).toBeGreaterThan(0);
      // the late grant went back before the second ask, which the work ran on
      expect(calls.slice(0, 3)).toEqual(['acquire', 'release', 'acquire']);
      expect(events.filter((e) => e.type === 'lost')).toEqual([]);
      expect(await memory.inspectShared('late')).toBeNull();
    }
  });

  it('is retried only until the wait is over: LockTimeoutError, with nothing held or queued', async () => {
    const { memory, store, delay, calls } = slowShared();
    const { locker, events } = newLocker(store);
    delay.ms = 150; // every answer is late
    const error = await firstValueFrom(locker.acquirePermit('slow', { limit: 1, waitTimeout: 400 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(calls.filter((c) => c === 'release').length).toBeGreaterThanOrEqual(2);
    expect(events.filter((e) => e.type === 'lost' || e.type === 'acquired')).toEqual([]);
    await sleep(20);
    expect(await memory.inspectShared('slow')).toBeNull();
  });

  it('with waitTimeout 0 (one attempt): given back, and the acquisition times out', async () => {
    const { memory, store, delay } = slowShared();
    const { locker } = newLocker(store);
    delay.ms = 150;
    const error = await firstValueFrom(locker.acquireWriteLock('once', { waitTimeout: 0 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    await sleep(20);
    expect(await memory.inspectShared('once')).toBeNull();
  });

  it('a TTL too short to have any validity is granted as asked (and lost at once), not retried', async () => {
    const { store, delay, calls } = slowShared();
    const { locker } = newLocker(store);
    delay.ms = 5;
    const lease = await firstValueFrom(locker.acquirePermit('tiny', { limit: 1, ttl: 2, renew: false, waitTimeout: 500 }));
    expect(calls.filter((c) => c === 'acquire')).toHaveLength(1);
    await lease.release();
  });
});
