/**
 * Issue #10, events after data loss: when the lock's data is wiped (FLUSHALL) while a second
 * acquisition waits in the same locker, the lock is still passed on locally (the locker cannot
 * know), but `events$` must not say the hold was protected. A holder that passed the lock on is
 * reported once the store answers about the lease (the next renewal or the final release): with
 * `outcome: 'gone'` when the store no longer had our key, `'passed'` only when it still had it; the
 * final holder's release is `'gone'` too; a holder whose renewal finds the key gone or taken gets a
 * `lost` event.
 *
 * On a real Redis, the exact events, in order, for: FLUSHALL while held with a local waiter (the
 * waiter releasing before any renewal, or holding past one); FLUSHALL with no waiter (released
 * before a renewal, or held past one); the key taken over by another token (same two ways); and,
 * for contrast, no data loss at all.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, type Lease, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const KEY = 'ledger';
/** Renewal is due this long after a grant (the TTL stays long: only renewal finds the loss). */
const RENEW_MS = 500;

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'], unhandled: 'afterEach' });
let redis: Redis;
let store: RedisLockStore;
let locker: Locker;
let events: LockEvent[];

beforeAll(() => {
  redis = connect(suite.server);
  store = new RedisLockStore(redis);
});
beforeEach(() => {
  // Big cohorts: a waiter queued behind the holder always gets the lock by a local pass.
  locker = createLocker({ store, keyPrefix: '', cohort: { maxPasses: 1000, maxMs: 60_000 } });
  events = [];
  locker.events$.subscribe((e) => events.push(e));
});
afterEach(async () => {
  await locker.close();
});
afterAll(() => {
  store?.close();
  redis?.disconnect();
});

/** Lease options of every acquisition here: renewed every RENEW_MS, or only at the end (`false`). */
const withRenewal = { ttl: 30_000, renew: { interval: RENEW_MS } } as const;
const noRenewalSoon = { ttl: 30_000 } as const;

/** The events so far, reduced to what identifies them. */
function reported(): unknown[] {
  return events.map((e) => {
    switch (e.type) {
      case 'acquired':
        return { type: e.type, id: e.id, fence: e.fence, passed: e.passed };
      case 'released':
        return { type: e.type, id: e.id, fence: e.fence, outcome: e.outcome };
      case 'lost':
        return { type: e.type, id: e.id, fence: e.fence, reason: e.reason };
      default:
        return { type: e.type };
    }
  });
}

const acquired = (lease: Lease, passed: boolean) => ({ type: 'acquired', id: lease.id, fence: lease.fence, passed });
const released = (lease: Lease, outcome: 'released' | 'passed' | 'gone') => ({ type: 'released', id: lease.id, fence: lease.fence, outcome });
const lost = (lease: Lease, reason: string) => ({ type: 'lost', id: lease.id, fence: lease.fence, reason });

/** Waits for `count` events, then a little more to see that no other comes. */
async function settle(count: number): Promise<void> {
  await eventually(() => events.length >= count, 5000);
  await sleep(50);
}

/** h1 holds the key and passes it locally to h2, after `loseData` ran while h1 held it. */
async function passAfter(loseData: () => Promise<unknown>, options: typeof withRenewal | typeof noRenewalSoon): Promise<{ h1: Lease; h2: Lease }> {
  const h1 = await firstValueFrom(locker.acquire(KEY, options));
  const waiting = firstValueFrom(locker.acquire(KEY, options));
  await loseData();
  expect(await h1.release()).toBe(true); // passed on locally, as documented: the store is not asked
  const h2 = await waiting;
  expect(h2.token).toBe(h1.token);
  expect(h2.fence).toBe(h1.fence + 1);
  // Nothing has been heard from the store since the pass: h1's release is not reported yet.
  expect(reported()).toEqual([acquired(h1, false), acquired(h2, true)]);
  return { h1, h2 };
}

describe('released and lost events when the lock data is lost', () => {
  it('no data loss (for contrast): the passed holder is reported "passed", the last one "released"', async () => {
    const { h1, h2 } = await passAfter(async () => undefined, noRenewalSoon);
    expect(await h2.release()).toBe(true);
    await settle(4);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'passed'), released(h2, 'released')]);
  });

  it('no data loss (for contrast), the new holder holding past a renewal: that renewal confirms the pass ("passed")', async () => {
    const { h1, h2 } = await passAfter(async () => undefined, withRenewal);
    await eventually(() => events.some((e) => e.type === 'renewed'), 5000);
    expect(reported().slice(0, 4)).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'passed'), { type: 'renewed' }]);
    expect(await h2.release()).toBe(true);
    await eventually(() => events.some((e) => e.type === 'released' && e.id === h2.id), 5000);
    expect(reported().filter((e) => (e as { type: string }).type !== 'renewed')).toEqual([
      acquired(h1, false),
      acquired(h2, true),
      released(h1, 'passed'),
      released(h2, 'released'),
    ]);
  });

  it('FLUSHALL while held, with a local waiter that releases before any renewal: both releases "gone"', async () => {
    const { h1, h2 } = await passAfter(() => suite.admin.flushall(), noRenewalSoon);
    expect(await h2.release()).toBe(false);
    await settle(4);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), released(h2, 'gone')]);
  });

  it('FLUSHALL while held, with a local waiter that holds past a renewal: h1 "gone", h2 lost (expired), and no released event after that', async () => {
    const { h1, h2 } = await passAfter(() => suite.admin.flushall(), withRenewal);
    const loss = await firstValueFrom(h2.lost$);
    expect(loss).toMatchObject({ reason: 'expired', key: KEY, token: h2.token });
    await settle(4);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), lost(h2, 'expired')]);
    expect(await h2.release()).toBe(false);
    await sleep(100);
    // a lost holder gets no released event: `lost` told how its hold ended
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), lost(h2, 'expired')]);
  });

  it('FLUSHALL while held, no waiter, released before any renewal: release() is false and the event "gone"', async () => {
    const h1 = await firstValueFrom(locker.acquire(KEY, noRenewalSoon));
    await suite.admin.flushall();
    expect(await h1.release()).toBe(false);
    await settle(2);
    expect(reported()).toEqual([acquired(h1, false), released(h1, 'gone')]);
  });

  it('FLUSHALL while held, no waiter, held past a renewal: lost (expired), and no released event after that', async () => {
    const h1 = await firstValueFrom(locker.acquire(KEY, withRenewal));
    await suite.admin.flushall();
    expect(await firstValueFrom(h1.lost$)).toMatchObject({ reason: 'expired' });
    await settle(2);
    expect(reported()).toEqual([acquired(h1, false), lost(h1, 'expired')]);
    expect(await h1.release()).toBe(false);
    await sleep(100);
    expect(reported()).toEqual([acquired(h1, false), lost(h1, 'expired')]);
  });

  it('the key taken over by another token, with a local waiter that releases before any renewal: both "gone", the taker keeps the key', async () => {
    const { h1, h2 } = await passAfter(() => suite.admin.set(KEY, 'intruder', 'PX', 20_000), noRenewalSoon);
    expect(await h2.release()).toBe(false);
    await settle(4);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), released(h2, 'gone')]);
    expect(await suite.admin.get(KEY)).toBe('intruder');
  });

  it('the key taken over by another token, with a local waiter that holds past a renewal: h1 "gone", h2 lost (taken over)', async () => {
    const { h1, h2 } = await passAfter(() => suite.admin.set(KEY, 'intruder', 'PX', 20_000), withRenewal);
    expect(await firstValueFrom(h2.lost$)).toMatchObject({ reason: 'taken-over' });
    await settle(4);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), lost(h2, 'taken-over')]);
    expect(await h2.release()).toBe(false);
    await sleep(100);
    expect(reported()).toEqual([acquired(h1, false), acquired(h2, true), released(h1, 'gone'), lost(h2, 'taken-over')]);
    expect(await suite.admin.get(KEY)).toBe('intruder');
  });

  it('the key taken over by another token, no waiter, held past a renewal: lost (taken over), and no released event after that', async () => {
    const h1 = await firstValueFrom(locker.acquire(KEY, withRenewal));
    await suite.admin.set(KEY, 'intruder', 'PX', 20_000);
    expect(await firstValueFrom(h1.lost$)).toMatchObject({ reason: 'taken-over' });
    expect(await h1.release()).toBe(false);
    await sleep(100);
    expect(reported()).toEqual([acquired(h1, false), lost(h1, 'taken-over')]);
    expect(await suite.admin.get(KEY)).toBe('intruder');
  });
});
