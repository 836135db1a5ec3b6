/**
 * Attack on a semaphore waiter that holds from the 'granted' signal, on a real Redis: a signal
 * that reaches the waiter late, on a slow subscriber connection, after its grant lapsed unclaimed
 * and another waiter took the permit — and after the waiter's next attempt was answered "queued".
 * The signal is dated before that attempt, so the waiter asks the store and keeps waiting: never
 * two holders of a one-permit semaphore. (What held; kept as a guard.) Also a forged signal dated
 * at (or before) the waiter's place: the waiter asks the store instead of holding — the date check
 * itself, which the late signal's lapsed validity covers for the first test.
 *
 * A holds the permit; B (ttl 300 ms, place TTL 3 s: refreshed every 750-1000 ms) waits with its
 * subscriber behind a proxy that delays what Redis sends by 1050 ms; C (place TTL 300 ms) waits
 * behind B. Just after B refreshed its place, A releases: the permit goes to B, whose grant lapses
 * 300 ms later; C takes it; B's next refresh is queued behind C; then B's signal arrives.
 */
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { delayProxy } from '../support/delayProxy.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();
const SIGNAL_DELAY = 1050;

function newLocker(storeOptions: RedisLockStoreOptions, ttl: number): Locker {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, storeOptions);
  const locker = createLocker({ store, ttl, waitTimeout: 20_000 });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

describe('a late grant signal of a lapsed grant of permits', () => {
  it('does not make a second holder', async () => {
    const proxy = await delayProxy(suite.server.port, SIGNAL_DELAY);
    suite.closers.push(() => proxy.close());
    const subscriber = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 2, retryStrategy: () => 50 });
    subscriber.on('error', () => undefined);
    await subscriber.ping();
    suite.closers.push(() => subscriber.disconnect());
    const lockerA = newLocker({}, 10_000);
    const lockerB = newLocker({ placeTtl: 3_000, subscriber }, 300);
    const lockerC = newLocker({ placeTtl: 300 }, 10_000);
    const line = helperKey('lock:sem', 'shared-line');
    const places = helperKey('lock:sem', 'shared-places');

    const a = await firstValueFrom(lockerA.acquirePermit('sem', { limit: 1 }));
    let bLease: Lease | undefined;
    let cHeldWhenB: boolean | undefined;
    let cLease: Lease | undefined;
    const bDone = firstValueFrom(lockerB.acquirePermit('sem', { limit: 1 })).then((lease) => {
      bLease = lease;
      cHeldWhenB = cLease?.held;
    });
    // B in line, its inbox subscribed through the slow link, refreshing its place slowly
    await eventually(async () => (await suite.admin.zcard(line)) === 1, 3_000);
    await sleep(SIGNAL_DELAY * 2 + 200);
    const cDone = firstValueFrom(lockerC.acquirePermit('sem', { limit: 1 })).then((lease) => {
      cLease = lease;
    });
    await eventually(async () => (await suite.admin.zcard(line)) === 2, 3_000);
    const bToken = (await suite.admin.zrange(line, '0', '0'))[0]!;
    const before = await suite.admin.hget(places, bToken);
    await eventually(async () => (await suite.admin.hget(places, bToken)) !== before, 3_000, 1);

    await a.release(); // grants B; B's signal is SIGNAL_DELAY away, B's grant lapses in 300 ms
    await Promise.race([cDone, sleep(2_000)]);
    expect(cLease?.held).toBe(true);
    await Promise.race([bDone, sleep(SIGNAL_DELAY + 500)]);
    // B either still waits, or got its permit only once C no longer held it
    expect(bLease === undefined || cHeldWhenB !== true).toBe(true);
    await cLease?.release();
    await bDone;
    expect(bLease?.held).toBe(true);
    await bLease?.release();
  });
});

describe('a forged grant signal, dated no later than the place it names', () => {
  it('makes the waiter ask the store, which says it waits: no second holder', async () => {
    // (long TTLs: only the signal's date, not the grant's validity, can turn it away)
    const lockerA = newLocker({}, 10_000);
    const lockerB = newLocker({ placeTtl: 3_000 }, 10_000);
    const line = helperKey('lock:forged', 'shared-line');
    const places = helperKey('lock:forged', 'shared-places');
    // B met contention a moment ago: its next wait listens first and attempts once, so the seed
    // of its place (its score in line) is the date its answer gave it
    const warm = await firstValueFrom(lockerA.acquirePermit('warm', { limit: 1 }));
    const bWarm = firstValueFrom(lockerB.acquirePermit('warm', { limit: 1 }));
    await sleep(20);
    await warm.release();
    await (await bWarm).release();
    const a = await firstValueFrom(lockerA.acquirePermit('forged', { limit: 1 }));
    let bLease: Lease | undefined;
    const bDone = firstValueFrom(lockerB.acquirePermit('forged', { limit: 1 })).then((lease) => (bLease = lease));
    await eventually(async () => (await suite.admin.zcard(line)) === 1, 3_000, 2);
    const bToken = (await suite.admin.zrange(line, '0', '0'))[0]!;
    // B's place: '<lapseAt> <ttl> <weight> <capacity> <placeTtl> <inbox>'; its seed is its score in line
    const inbox = (await suite.admin.hget(places, bToken))!.split(' ').at(-1)!;
    await sleep(50); // B's attempt was answered: it sleeps in line, listening
    const seed = Number(await suite.admin.zscore(line, bToken));
    // a grant dated at the seed of B's place (not after it), and one dated before it
    for (const at of [seed, seed - 1]) expect(await suite.admin.publish(inbox, `granted ${bToken} 999999 0 1 ${at}`)).toBe(1);
    await sleep(100);
    expect(bLease).toBeUndefined(); // it asked the store, which answered: queued
    expect(a.held).toBe(true);
    expect(await suite.admin.zscore(line, bToken)).not.toBeNull();
    await a.release();
    await bDone;
    expect(bLease!.fence).not.toBe(999999);
    await bLease!.release();
  });
});
