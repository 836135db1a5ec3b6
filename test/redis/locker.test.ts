/**
 * The locker end to end on a real Redis: release exactly once on complete, error and
 * unsubscribe (counted by the server), only the owner's release deletes, and the wait limit.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, NEVER, of, throwError, timer } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, LockTimeoutError, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';

let server: EmbeddedRedis;
let client: Redis;
let admin: Redis;
let locker: Locker;
let events: LockEvent[];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  client = connect(server);
  admin = connect(server);
  locker = createLocker({ store: new RedisLockStore(client), keyPrefix: 'it:' });
  locker.events$.subscribe((e) => events.push(e));
  // Warm the script cache so the counts below are one EVALSHA per acquire and per release.
  const warm = new RedisLockStore(client);
  await warm.tryAcquire('warm-up', 'x', 1000);
  await warm.release('warm-up', 'x');
});
afterAll(async () => {
  client?.disconnect();
  admin?.disconnect();
  await server?.stop();
});
beforeEach(async () => {
  events = [];
  await admin.flushall();
  await admin.config('RESETSTAT');
});

async function calls(command: string): Promise<number> {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await admin.info('commandstats'));
  return match ? Number(match[1]) : 0;
}

describe('release exactly once (counted by Redis)', () => {
  it('on complete', async () => {
    expect(await lastValueFrom(of('done').pipe(locker.withLock('k')))).toBe('done');
    expect(await admin.exists('it:k')).toBe(0);
    // Inside the acquire script, the lock only: its fences start at the server clock, which has
    // passed them by the release, so no fence counter is written (lua/lib/fences.lua).
    expect(await calls('set')).toBe(1);
    expect(await calls('evalsha')).toBe(2); // acquire + release
  });

  it('on error', async () => {
    const boom = new Error('boom');
    await expect(lastValueFrom(throwError(() => boom).pipe(locker.withLock('k')))).rejects.toBe(boom);
    expect(await admin.exists('it:k')).toBe(0);
    expect(await calls('evalsha')).toBe(2);
  });

  it('on unsubscribe', async () => {
    const subscription = NEVER.pipe(locker.withLock('k')).subscribe();
    await sleep(20);
    expect(await admin.exists('it:k')).toBe(1);
    subscription.unsubscribe();
    subscription.unsubscribe();
    await sleep(20);
    expect(await admin.exists('it:k')).toBe(0);
    expect(await calls('evalsha')).toBe(2);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'released']);
  });
});

describe('ownership', () => {
  it("a lease whose key expired and was taken by another cannot delete the new holder's key", async () => {
    const stale = await firstValueFrom(locker.acquire('k', { ttl: 50, renew: false }));
    await sleep(100);
    const fresh = await firstValueFrom(locker.acquire('k', { waitTimeout: 0 }));
    expect(await stale.release()).toBe(false);
    expect(await admin.get('it:k')).toBe(fresh.token);
    // the stale lease was lost (its deadline passed): that event told how it ended, no released follows
    expect(events.filter((e) => 'token' in e && e.token === stale.token).map((e) => e.type)).toEqual(['acquired', 'lost']);
    expect(await fresh.release()).toBe(true);
  });
});

describe('wait limit', () => {
  it('a key held by another process gives LockTimeoutError after about waitTimeout', async () => {
    const other = createLocker({ store: new RedisLockStore(admin), keyPrefix: 'it:' });
    const holder = await firstValueFrom(other.acquire('k'));
    const started = performance.now();
    const error = await firstValueFrom(locker.acquire('k', { waitTimeout: 300 })).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(isLockTimeoutError(error)).toBe(true);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).key).toBe('k');
    // tried, took a place in line (woken by pub/sub, so no fast polling), and tried at the end
    expect((error as LockTimeoutError).attempts).toBeGreaterThanOrEqual(2);
    expect(elapsed).toBeGreaterThanOrEqual(299);
    expect(elapsed).toBeLessThan(600);
    expect(events.map((e) => e.type)).toEqual(['timed-out']);
    await holder.release();
  });

  it('a key held in this process makes a waiter wait locally, without asking Redis', async () => {
    const holder = await firstValueFrom(locker.acquire('k'));
    await admin.config('RESETSTAT');
    const error = await firstValueFrom(locker.acquire('k', { waitTimeout: 200 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect((error as LockTimeoutError).attempts).toBe(1); // one look at the local line
    expect(await calls('evalsha')).toBe(0);
    await holder.release();
  });

  it('a waiter gets the lock soon after the holder releases', async () => {
    const holding = lastValueFrom(timer(100).pipe(locker.withLock('k')));
    await sleep(10);
    const lease = await firstValueFrom(locker.acquire('k'));
    await holding;
    expect(events.map((e) => e.type)).toEqual(['acquired', 'released', 'acquired']);
    const [, released, acquired] = events as [LockEvent, { heldMs: number }, { waitedMs: number }];
    // Granted only after the release (the order above), and within a back-off step or so of it
    // (sleeps of 10–30 ms), far from the 10 s wait limit.
    expect(acquired.waitedMs).toBeLessThan(released.heldMs + 500);
    await lease.release();
  });
});
