/**
 * Lease safety on a real Redis: renewal keeps a long stream's lock, a key deleted or taken by
 * someone else is noticed within one renewal interval, a frozen Redis makes the holder give up at
 * its local deadline (before the server could hand the key to anyone), renewals of many leases
 * share round trips, and leases can be extended by hand.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, NEVER, Subject, tap, timer } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, isLockOptionsError, isLockTimeoutError, type Lease, type LockEvent, type LockLostError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { countingClient } from '../../support/countingClient.js';
import type { LockEngine } from '../../src/engine/LockEngine.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockKeyCount } from '../support/lockKeys.js';
import { eventually as eventuallyEvery, sleep } from '../support/timing.js';

const eventually = (check: () => Promise<boolean> | boolean, ms = 3000) => eventuallyEvery(check, ms, 5);

const suite = redisSuite({ unhandled: 'afterEach' });
let client: Redis;

beforeAll(() => {
  client = connect(suite.server, { maxRetriesPerRequest: null });
});
afterAll(() => {
  client?.disconnect();
});

/** A locker on the shared client, recording its events. */
function lockerWith(options: Parameters<typeof createLocker>[0] = {}) {
  const locker = createLocker({ store: new RedisLockStore(client), keyPrefix: '', ...options });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  return { locker, events, engine: locker as unknown as LockEngine };
}

async function evalshaCalls(): Promise<number> {
  const match = /^cmdstat_evalsha:calls=(\d+)/m.exec(await suite.admin.info('commandstats'));
  return match ? Number(match[1]) : 0;
}

describe('watchdog renewal', () => {
  it('a stream that runs 5× its TTL keeps the lock, and a competitor times out meanwhile', async () => {
    const { locker, events } = lockerWith({ ttl: 200 });
    const rival = createLocker({ store: new RedisLockStore(suite.admin), keyPrefix: '' });
    const holding = lastValueFrom(timer(1000).pipe(locker.withLock('long')));
    await eventually(() => events.some((e) => e.type === 'acquired'));
    const rivalError = await firstValueFrom(rival.acquire('long', { waitTimeout: 700 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(rivalError)).toBe(true);
    await expect(holding).resolves.toBe(0);
    const types = events.map((e) => e.type);
    // renewed every ttl/3 = 66 ms: about 15 times in 1 s
    expect(types.filter((t) => t === 'renewed').length).toBeGreaterThanOrEqual(10);
    expect(types[0]).toBe('acquired');
    expect(types.at(-1)).toBe('released');
    expect(types).not.toContain('lost');
    expect(events.at(-1)).toMatchObject({ type: 'released', outcome: 'released' });
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });

  it('renews at the configured interval, and stops exactly at release', async () => {
    const { locker, events, engine } = lockerWith({ ttl: 1000, renew: { interval: 50 } });
    const lease = await firstValueFrom(locker.acquire('interval'));
    await sleep(275);
    const renewed = events.filter((e) => e.type === 'renewed').length;
    expect(renewed).toBeGreaterThanOrEqual(3);
    expect(renewed).toBeLessThanOrEqual(7);
    expect(await suite.admin.pttl('interval')).toBeGreaterThan(900);
    await lease.release();
    const before = await evalshaCalls();
    await sleep(200);
    // no renewal after the release
    expect(await evalshaCalls()).toBe(before);
    expect(events.filter((e) => e.type === 'renewed').length).toBe(renewed);
    expect(engine.scheduledRenewals).toBeLessThanOrEqual(1);
  });

  it('renew: false lets the lease end with its TTL: withLock errors with LockLostError (expired)', async () => {
    const { locker, events } = lockerWith({ ttl: 150, renew: false });
    const started = performance.now();
    const error = await lastValueFrom(NEVER.pipe(locker.withLock('no-renew'))).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(isLockLostError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'no-renew', reason: 'expired' });
    // validity of a 150 ms lease: 150 − 1.5 − 2 = 146.5 ms after the acquire was sent
    expect(elapsed).toBeGreaterThanOrEqual(146);
    expect(elapsed).toBeLessThan(146.5 + 100);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'lost']);
  });
});

describe('lease loss reaches the stream', () => {
  it('a key deleted by someone else → LockLostError (expired) within one renewal interval', async () => {
    const { locker, events } = lockerWith({ ttl: 600 }); // renewal every 200 ms
    const source = new Subject<number>();
    const result = lastValueFrom(source.pipe(locker.withLock('deleted'))).catch((e: unknown) => e);
    await eventually(() => events.some((e) => e.type === 'acquired'));
    expect(source.observed).toBe(true);
    await suite.admin.del('deleted');
    const deletedAt = performance.now();
    const error = (await result) as LockLostError;
    const noticedAfter = performance.now() - deletedAt;
    expect(isLockLostError(error)).toBe(true);
    expect(error.reason).toBe('expired');
    expect(noticedAfter).toBeLessThan(200 + 100);
    // the work was unsubscribed
    expect(source.observed).toBe(false);
    expect(events.some((e) => e.type === 'lost' && e.reason === 'expired')).toBe(true);
  });

  it('a key overwritten by another owner → LockLostError (taken-over), and their key is left alone', async () => {
    const { locker, events } = lockerWith({ ttl: 600 });
    const result = lastValueFrom(NEVER.pipe(locker.withLock('overwritten'))).catch((e: unknown) => e);
    await eventually(() => events.some((e) => e.type === 'acquired'));
    await suite.admin.set('overwritten', 'intruder', 'PX', 10_000);
    const overwrittenAt = performance.now();
    const error = (await result) as LockLostError;
    expect(performance.now() - overwrittenAt).toBeLessThan(200 + 100);
    expect(error).toMatchObject({ name: 'LockLostError', key: 'overwritten', reason: 'taken-over' });
    // the release started at the loss (owner-checked) leaves the new owner's key alone; a lost
    // holder gets no released event: `lost` told how its hold ended
    await sleep(100);
    expect(events.some((e) => e.type === 'released')).toBe(false);
    expect(await suite.admin.get('overwritten')).toBe('intruder');
  });

  it("onLost: 'notify' keeps the work running and reports the loss on lease.lost$ and events$", async () => {
    const { locker, events } = lockerWith({ ttl: 300, onLost: 'notify' });
    const lost: LockLostError[] = [];
    const values: number[] = [];
    let leaseSeen: Lease | undefined;
    const errors: unknown[] = [];
    const subscription = locker
      .using('notify', (lease) => {
        leaseSeen = lease;
        lease.lost$.subscribe((e) => lost.push(e));
        return timer(0, 20).pipe(tap((v) => values.push(v)));
      })
      .subscribe({ error: (e: unknown) => errors.push(e) });
    await eventually(() => leaseSeen !== undefined);
    await suite.admin.set('notify', 'intruder');
    await eventually(() => lost.length === 1);
    const countAtLoss = values.length;
    expect(lost[0]).toMatchObject({ reason: 'taken-over', key: 'notify', token: leaseSeen!.token });
    expect(leaseSeen!.held).toBe(false);
    expect(events.some((e) => e.type === 'lost')).toBe(true);
    await sleep(120);
    expect(values.length).toBeGreaterThan(countAtLoss + 2); // the work goes on
    expect(errors).toEqual([]);
    subscription.unsubscribe();
    await sleep(100);
    expect(await suite.admin.get('notify')).toBe('intruder');
  });

  it('a paused Redis (SIGSTOP past the TTL) → LockLostError at the local deadline, before the key can expire; all well after SIGCONT', async () => {
    const { locker, engine } = lockerWith({ ttl: 400 }); // renewals every 133 ms; commandTimeout 2 s
    let lease: Lease | undefined;
    const result = lastValueFrom(
      locker.using('frozen', (l) => {
        lease = l;
        return NEVER;
      }),
    ).catch((e: unknown) => e);
    await eventually(() => lease !== undefined);
    suite.server.pause();
    let error: unknown;
    let erroredAt = 0;
    try {
      error = await result;
      erroredAt = performance.now();
    } finally {
      suite.server.resume();
    }
    expect(isLockLostError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'frozen', reason: 'store-unreachable' });
    // The deadline comes before the server-side expiry (at least acquiredAt + 400 ms), and the
    // error at that deadline: not before it, and late only by the timer's lateness (on a loaded
    // machine a timer fires tens of ms late, so that bound is loose; the deadline's is not).
    expect(lease!.validUntil).toBeLessThan(lease!.acquiredAt + 400);
    expect(erroredAt).toBeGreaterThanOrEqual(lease!.validUntil);
    expect(erroredAt - lease!.validUntil).toBeLessThan(150);

    // After SIGCONT: the release sent at the loss is answered, no renewal runs any more, and
    // the key can be taken again.
    await eventually(async () => (await suite.admin.exists('frozen')) === 0);
    const before = await evalshaCalls();
    await sleep(400);
    expect(await evalshaCalls()).toBe(before);
    expect(engine.scheduledRenewals).toBeLessThanOrEqual(1);
    const again = await firstValueFrom(locker.acquire('frozen', { waitTimeout: 1000 }));
    expect(again.fence).toBeGreaterThan(lease!.fence);
    await again.release();
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });
});

describe('renewals share round trips', () => {
  it.skipIf(process.env.MUTATION === '1')(
    '10,000 held leases are renewed in a handful of pipelines per interval, not 10,000 calls',
    async () => {
      const counting = countingClient(client);
      const locker = createLocker({ store: new RedisLockStore(counting.client), keyPrefix: '', ttl: 3000, waitTimeout: 0 });
      let renewed = 0;
      locker.events$.subscribe((e) => {
        if (e.type === 'renewed') renewed++;
      });
      const leases: Lease[] = [];
      for (let i = 0; i < 10_000; i += 500) {
        leases.push(...(await Promise.all(Array.from({ length: 500 }, (_, j) => firstValueFrom(locker.acquire(`many:${i + j}`))))));
      }
      const directAfterAcquire = counting.direct;
      const batchesAfterAcquire = counting.batches;
      // two renewal intervals (1 s each) after the last acquisition
      await sleep(2300);
      expect(renewed).toBeGreaterThanOrEqual(20_000);
      // every renewal sent in a pipeline is answered (a batch may still be in flight right now)
      await eventuallyEvery(() => counting.batched === renewed, 3000);
      expect(counting.batched).toBe(renewed);
      expect(counting.direct - directAfterAcquire).toBe(0);
      expect(counting.batches - batchesAfterAcquire).toBeLessThanOrEqual(30);
      expect(leases.every((l) => l.held)).toBe(true);
      await Promise.all(leases.map((l) => l.release()));
      expect(await lockKeyCount(suite.admin)).toBe(0);
    },
    30_000,
  );
});

describe('lease.extend()', () => {
  it('extends by hand, moves validUntil, and reports a gone key as lost', async () => {
    const { locker, events } = lockerWith({ ttl: 300, renew: false });
    const lease = await firstValueFrom(locker.acquire('manual'));
    const firstDeadline = lease.validUntil;
    await sleep(50);
    expect(await lease.extend(5000)).toBe(true);
    expect(lease.ttl).toBe(5000);
    expect(lease.validUntil).toBeGreaterThan(firstDeadline + 4000);
    expect(await suite.admin.pttl('manual')).toBeGreaterThan(4500);
    await sleep(400); // past the first TTL: still held thanks to the extension
    expect(lease.held).toBe(true);
    expect(await suite.admin.get('manual')).toBe(lease.token);

    await expect(lease.extend(2)).rejects.toSatisfy((e: unknown) => isLockOptionsError(e) && e.option === 'ttl');
    await expect(lease.extend(-5)).rejects.toSatisfy(isLockOptionsError);

    await suite.admin.del('manual');
    const lost = firstValueFrom(lease.lost$);
    expect(await lease.extend()).toBe(false);
    expect(await lost).toMatchObject({ reason: 'expired' });
    expect(lease.held).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'renewed', 'lost']);
    expect(await lease.release()).toBe(false);
    expect(await lease.extend()).toBe(false);
  });

  it('after release, extend answers false and lost$ completes without a value', async () => {
    const { locker } = lockerWith({ ttl: 1000 });
    const lease = await firstValueFrom(locker.acquire('released'));
    await lease.release();
    expect(await lease.extend()).toBe(false);
    const seen: unknown[] = [];
    await new Promise<void>((resolve) => lease.lost$.subscribe({ next: (e) => seen.push(e), complete: resolve }));
    expect(seen).toEqual([]);
    expect(await suite.admin.exists('released')).toBe(0);
  });
});
