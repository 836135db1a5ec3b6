/**
 * The set-up of attackWakeSignals.test.ts and attackMixedVersions.test.ts: a grant signal that
 * reaches a waiter late, on a slow subscriber connection.
 *
 * A holds the key; B (ttl B_TTL, place TTL B_PLACE_TTL) waits in line with its subscriber
 * connection behind a proxy that delays what Redis sends by SIGNAL_DELAY; C (place TTL
 * C_PLACE_TTL) waits behind B. Just after B refreshed its place, A releases (by the caller's
 * `releaseA`): the key goes to B and B's signal is on its way; B's grant lapses unclaimed and C
 * takes the key; B's next refresh is answered "queued" (behind C); then B's signal arrives.
 */
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { expect } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { delayProxy } from './delayProxy.js';
import { keysOf, lineOf } from './handoffHarness.js';
import { connect } from './redis.js';
import type { RedisSuite } from './redisSuite.js';
import { eventually, sleep } from './timing.js';

/** B's place lasts 3 s: refreshed every 750-1000 ms while woken by signals. */
export const B_PLACE_TTL = 3000;
/** B's ttl: a key handed to B lapses 300 ms after the hand-off unless B claims it. */
export const B_TTL = 300;
/** C refreshes its place every 75-100 ms, so it takes a lapsed grant at once. */
export const C_PLACE_TTL = 300;
/** What B's subscriber link adds: B's next refresh (750-1000 ms after the release) comes before its signal. */
export const SIGNAL_DELAY = 1050;

/** A round in which B and C held the key at once. */
export interface Overlap {
  round: number;
  bFence: number;
  cFence: number;
  redisHolder: string | null;
  bToken: string;
  cToken: string;
}

/**
 * Runs the scenario for up to `rounds` rounds (on keys `stale-<round>`; it stops at the first
 * overlap). `releaseA` gives A's lease `a` of `key` back, handing the key to B. Returns the
 * overlaps seen, and how many times B got a lease from the late signal at all.
 */
export async function lateGrantSignalRounds(
  suite: RedisSuite,
  rounds: number,
  releaseA: (a: Lease, key: string) => Promise<void>,
): Promise<{ overlaps: Overlap[]; staleWins: number }> {
  const { server, admin, closers } = suite;
  const newLocker = (storeOptions: RedisLockStoreOptions, ttl: number): Locker => {
    const client = connect(server);
    const store = new RedisLockStore(client, storeOptions);
    const locker = createLocker({ store, ttl, waitTimeout: 20_000 });
    closers.push(
      () => client.disconnect(),
      () => store.close(),
      () => locker.close(),
    );
    return locker;
  };

  const proxy = await delayProxy(server.port, SIGNAL_DELAY);
  closers.push(() => proxy.close());
  const overlaps: Overlap[] = [];
  let staleWins = 0;

  for (let round = 0; round < rounds && overlaps.length === 0; round++) {
    const key = `stale-${round}`;
    const subscriber = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 2, retryStrategy: () => 50 });
    subscriber.on('error', () => undefined);
    await subscriber.ping(); // connected (through the slow link)
    closers.push(() => subscriber.disconnect());

    const lockerA = newLocker({}, 10_000);
    const lockerB = newLocker({ placeTtl: B_PLACE_TTL, subscriber }, B_TTL);
    const lockerC = newLocker({ placeTtl: C_PLACE_TTL }, 10_000);

    const a = await firstValueFrom(lockerA.acquire(key));
    let bLease: Lease | undefined;
    let cAtB: boolean | undefined;
    let bHeldAtB = false;
    let holderAtB: string | null = null;
    let cLease: Lease | undefined;
    const bDone = firstValueFrom(lockerB.acquire(key)).then(async (lease) => {
      bLease = lease;
      cAtB = cLease?.held; // at the very moment B got its lease
      bHeldAtB = lease.held;
      holderAtB = await admin.get(`lock:${key}`);
    });
    // B: queued, its inbox subscribed through the slow link, refreshing its place slowly.
    await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 1, 3000);
    await sleep(SIGNAL_DELAY * 2 + 200);
    const cDone = firstValueFrom(lockerC.acquire(key)).then((lease) => {
      cLease = lease;
    });
    await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 2, 3000);
    // Release just after B refreshed its place (its next refresh is 750-1000 ms away).
    const bToken = (await lineOf(admin, `lock:${key}`))[0]!.token;
    const placeKey = keysOf(`lock:${key}`).places;
    const before = await admin.hget(placeKey, `w:${bToken}`);
    await eventually(async () => (await admin.hget(placeKey, `w:${bToken}`)) !== before, 3000, 1);

    // A's release hands the key to B; B's signal is SIGNAL_DELAY ms away.
    await releaseA(a, key);
    await Promise.race([cDone, sleep(2000)]);
    expect(cLease?.held).toBe(true);
    await Promise.race([bDone, sleep(SIGNAL_DELAY + 500)]);
    if (bLease !== undefined) {
      staleWins++;
      if (cAtB === true && bHeldAtB) {
        overlaps.push({ round, bFence: bLease.fence, cFence: cLease!.fence, redisHolder: holderAtB, bToken: bLease.token, cToken: cLease!.token });
      }
    }
    await cLease?.release();
    await bDone.catch(() => undefined);
    await bLease?.release();
  }
  return { overlaps, staleWins };
}
