/**
 * Attack on the line of semaphores and read-write locks on a real Redis (what held, kept as
 * guards):
 * - a waiter whose process vanished without leaving (its connection dropped) holds the head of the
 *   line, and is even granted by the next release; the waiter behind it gets in once that place
 *   would have lapsed — a stall of at most `placeTtl` after its last call, not the grant's TTL;
 * - the subscriber connection killed (CLIENT KILL TYPE pubsub) while waiters sleep: they look
 *   again when it drops and when it is back, so a release's grant still reaches them;
 * - a cancellation storm (waiters and holders of a semaphore and a read-write lock unsubscribed at
 *   random moments, across three lockers): the limit and the write exclusion hold throughout, and
 *   afterwards nothing is left in Redis and the whole capacity is free at once.
 */
import { defer, finalize, firstValueFrom, lastValueFrom, merge, takeUntil, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();
const PLACE_TTL = 300;

/** A locker on a connection of its own (closed after the test), its places lasting PLACE_TTL. */
function newLocker(options: Parameters<typeof createLocker>[0] = {}, placeTtl = PLACE_TTL) {
  const client = connect(suite.server, { maxRetriesPerRequest: null });
  const store = new RedisLockStore(client, { placeTtl });
  const locker = createLocker({ store, retry: { minDelay: 2, jitter: 4 }, ...options });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return { locker, client };
}

describe('a waiter that vanished at the head of the line', () => {
  it('blocks the ones behind it no longer than its place would have lasted', async () => {
    const a = newLocker({ ttl: 10_000 });
    const dead = newLocker({ ttl: 10_000 });
    const b = newLocker({ ttl: 10_000 });
    const held = await firstValueFrom(a.locker.acquirePermit('dead', { limit: 1 }));
    dead.locker.acquirePermit('dead', { limit: 1 }).subscribe({ error: () => undefined });
    await eventually(async () => (await suite.admin.zcard('rxjs-lock:shared-line:{lock:dead}')) === 1);
    const lastCall = performance.now();
    dead.client.disconnect(); // gone without a word: no refresh, no leave
    const waiting = firstValueFrom(b.locker.acquirePermit('dead', { limit: 1, waitTimeout: 8_000 }));
    await sleep(20);
    await held.release(); // granted to the dead waiter (its place is live), for what is left of the place
    const lease = await waiting;
    // not the 10 s its TTL asked for: the place's lifetime, plus the polling and a loaded machine
    expect(performance.now() - lastCall).toBeLessThan(PLACE_TTL + 2_000);
    await lease.release();
  });
});

describe('the subscriber connection killed while waiters sleep', () => {
  it('a release still reaches them', async () => {
    const a = newLocker();
    // polls too slowly to matter: a back-off of 5 s, and with a live channel a refresh of its
    // places every 2.5 to 3.3 s (a quarter to a third of 10 s)
    const b = newLocker({ retry: { minDelay: 5_000, jitter: 0 } }, 10_000);
    const held = await firstValueFrom(a.locker.acquireWriteLock('pubsub'));
    const readers = Promise.all([1, 2].map(() => firstValueFrom(b.locker.acquireReadLock('pubsub', { waitTimeout: 8_000 }))));
    await sleep(100); // in line, channel live
    expect(Number(await suite.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBeGreaterThan(0);
    await sleep(100); // dropped and back
    const released = performance.now();
    await held.release();
    const leases = await readers;
    expect(performance.now() - released).toBeLessThan(1_500);
    for (const lease of leases) await lease.release();
  });
});

describe('a cancellation storm', () => {
  it('keeps the limit and the write exclusion, and leaves nothing behind', async () => {
    const lockers: Locker[] = [newLocker().locker, newLocker().locker, newLocker().locker];
    let permits = 0;
    let mostPermits = 0;
    let readers = 0;
    let writers = 0;
    let overlaps = 0;
    let ran = 0;
    const enter = (what: () => void, leave: () => void) =>
      defer(() => {
        what();
        ran++;
        return timer(Math.random() * 15).pipe(finalize(leave));
      });
    const jobs = Array.from({ length: 90 }, (_, i) => {
      const locker = lockers[i % 3]!;
      const weight = 1 + (i % 3);
      const job =
        i % 4 === 0
          ? enter(
              () => (overlaps += ++writers > 1 || readers > 0 ? 1 : 0),
              () => writers--,
            ).pipe(locker.withWriteLock('rw'))
          : i % 4 === 1
            ? enter(
                () => ((overlaps += writers > 0 ? 1 : 0), readers++),
                () => readers--,
              ).pipe(locker.withReadLock('rw'))
            : enter(
                () => (mostPermits = Math.max(mostPermits, (permits += weight))),
                () => (permits -= weight),
              ).pipe(locker.withPermit('sem', { limit: 3, permits: weight }));
      return job.pipe(takeUntil(timer(Math.random() * 300)));
    });
    await lastValueFrom(merge(...jobs), { defaultValue: undefined });
    expect(ran).toBeGreaterThan(0);
    expect(mostPermits).toBeLessThanOrEqual(3);
    expect(overlaps).toBe(0);
    // every place and permit given back: only fence counters (2 ms) may linger
    await eventually(async () => (await suite.admin.keys('*')).every((k) => k.includes('shared-fence')), 3_000);
    const all = await firstValueFrom(lockers[0]!.acquirePermit('sem', { limit: 3, permits: 3, waitTimeout: 0 }));
    const writer = await firstValueFrom(lockers[1]!.acquireWriteLock('rw', { waitTimeout: 0 }));
    await all.release();
    await writer.release();
  });
});
