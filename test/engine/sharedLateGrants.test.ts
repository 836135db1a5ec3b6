/**
 * Shared locks (permits, read and write locks) granted by an answer that arrives after the lease's
 * validity has passed — a store slower than the TTL. As for a mutex (KeyGate.won), the grant is
 * not handed out lost already: the permits are given back and asked for again, until the wait is
 * over. The store here is the in-memory one behind a controllable answer delay; the same on real
 * Redis behind a slow link is in test/redis/permitSlowLink.test.ts.
 */
import { firstValueFrom, ignoreElements, lastValueFrom, of, timer } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type LockEvent, type Locker, type LockStore } from '../../src/index.js';
import type { SharedLockStore } from '../../src/store/SharedLockStore.js';
import { eventually, sleep } from '../support/timing.js';

const opened: Locker[] = [];
afterEach(async () => {
  for (const locker of opened.splice(0)) await locker.close();
});

/**
 * The in-memory store whose `tryAcquireShared` answers come `delay.ms` late (after it ran), for the
 * next `delay.answers` answers (all by default). `said`: the next `said.answers` grants say their
 * permits last `said.ttl` ms (as Redis says of a grant from its line that is about to lapse) while
 * the store keeps them for the TTL asked. `release.ms`: each `releaseShared` answers that late;
 * `release.fail`: the next that many reject (after running nothing).
 */
function slowShared() {
  const memory = new MemoryLockStore();
  const delay = { ms: 0, answers: Infinity };
  const said = { ttl: 1, answers: 0 };
  const release = { ms: 0, fail: 0 };
  const calls: string[] = [];
  const store: LockStore & SharedLockStore = {
    tryAcquire: (key, token, ttl) => memory.tryAcquire(key, token, ttl),
    extend: (key, token, ttl) => memory.extend(key, token, ttl),
    release: (key, token) => memory.release(key, token),
    tryAcquireShared: async (key, token, ttl, weight, capacity, place) => {
      calls.push('acquire');
      const answer = await memory.tryAcquireShared(key, token, ttl, weight, capacity, place);
      if (delay.ms > 0 && delay.answers > 0) {
        delay.answers--;
        await sleep(delay.ms);
      }
      if (answer.acquired && said.answers > 0) {
        said.answers--;
        return { ...answer, ttl: said.ttl };
      }
      return answer;
    },
    extendShared: (key, token, ttl) => memory.extendShared(key, token, ttl),
    releaseShared: async (key, token) => {
      calls.push('release');
      if (release.ms > 0) await sleep(release.ms);
      if (release.fail > 0) {
        release.fail--;
        calls.push('release failed');
        throw new Error('store down');
      }
      const answer = await memory.releaseShared(key, token);
      calls.push('release settled');
      return answer;
    },
    leaveShared: (key, token) => (calls.push('leave'), memory.leaveShared(key, token)),
  };
  return { memory, store, delay, said, release, calls };
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
      expect(calls.slice(0, 4)).toEqual(['acquire', 'release', 'release settled', 'acquire']);
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

  it('answered late at the wait limit: given back, then a time-out — no attempt after the limit, even one that would be granted', async () => {
    // (the last attempt leaves the line, waitTimeout 0; or the wait was over when the give-back was
    // answered, waitTimeout 100: either way the wait is over — the next answer would be quick)
    for (const waitTimeout of [0, 100]) {
      const { memory, store, delay, calls } = slowShared();
      const { locker, events } = newLocker(store);
      delay.ms = 150;
      delay.answers = 1;
      const error = await firstValueFrom(locker.acquirePermit('limit', { limit: 1, waitTimeout })).catch((e: unknown) => e);
      expect(isLockTimeoutError(error)).toBe(true);
      expect(calls).toEqual(['acquire', 'release', 'release settled']);
      expect(events.filter((e) => e.type === 'acquired')).toEqual([]);
      expect(await memory.inspectShared('limit')).toBeNull();
    }
  });

  it("answered late on the retry function's last attempt (the one that leaves the line): given back, then a time-out, with time left", async () => {
    const { memory, store, said, calls } = slowShared();
    const { locker, events } = newLocker(store);
    const held = await firstValueFrom(locker.acquirePermit('last', { limit: 1, ttl: 5_000 }));
    calls.length = 0;
    // The retry function gives up after 30 ms without asking again; the holder is gone by then, so
    // the last attempt is granted — with 1 ms left, as the store says: it goes back.
    const error = firstValueFrom(
      locker.acquirePermit('last', { limit: 1, ttl: 5_000, waitTimeout: Infinity, retry: () => timer(30).pipe(ignoreElements()) }),
    ).catch((e: unknown) => e);
    await eventually(() => calls.includes('acquire'), 2_000, 1);
    said.answers = 1;
    await held.release();
    expect(isLockTimeoutError(await error)).toBe(true);
    // one refusal, the holder's release, the last attempt (granted, late), its give-back: no more
    expect(calls).toEqual(['acquire', 'release', 'release settled', 'acquire', 'release', 'release settled']);
    expect(events.filter((e) => e.type === 'acquired')).toHaveLength(1); // the holder's only
    expect(await memory.inspectShared('last')).toBeNull();
  });

  it('abandoned while a late grant is being given back: once that give-back settled, the line is left — which gives the permits back if it failed', async () => {
    const { memory, store, said, release, calls } = slowShared();
    const { locker } = newLocker(store);
    // The grant says its permits have 1 ms left (no validity by the time it is read): it goes back.
    said.answers = 1;
    release.ms = 40;
    release.fail = 1;
    const waiting = locker.acquirePermit('gone', { limit: 1, ttl: 5_000, waitTimeout: 10_000 }).subscribe({ error: () => undefined });
    // The give-back is in flight: the subscriber leaves now.
    await eventually(() => calls.includes('release'), 2_000, 1);
    waiting.unsubscribe();
    expect(calls).toEqual(['acquire', 'release']);
    await eventually(() => calls.includes('leave'), 2_000, 5);
    // The leave went out after the give-back settled (it failed), not before and not never…
    expect(calls).toEqual(['acquire', 'release', 'release failed', 'leave']);
    // …and gave back the permits the failed release kept (the store holds them for 5 s).
    expect(await memory.inspectShared('gone')).toBeNull();
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
