/**
 * `long-wait` events on a real Redis tell the two usual causes of a long wait apart: a holder
 * that keeps the key (named, with its TTL and the store's line, and seen for longer and longer),
 * a slow link (the read time is at least the link's delay), a frozen server (the read fails with
 * LockStoreError, no holder).
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, type Subscription } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockStoreError, type LockEvent, type Locker, type LongWaitEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { delayProxy, type DelayProxy } from '../support/delayProxy.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { sleep } from '../support/timing.js';

let server: EmbeddedRedis;
const clients: Redis[] = [];
const lockers: Locker[] = [];
const subscriptions: Subscription[] = [];
let proxy: DelayProxy | undefined;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
});
afterAll(async () => {
  for (const s of subscriptions) s.unsubscribe();
  for (const l of lockers) await l.close();
  for (const c of clients) c.disconnect();
  await proxy?.close();
  await server?.stop();
});

function lockerOn(port: number, options: Parameters<typeof createLocker>[0] = {}): Locker {
  const client = connect({ host: server.host, port } as EmbeddedRedis, { maxRetriesPerRequest: null });
  clients.push(client);
  const l = createLocker({ store: new RedisLockStore(client), ...options });
  lockers.push(l);
  return l;
}

function longWaitsOf(l: Locker): LongWaitEvent[] {
  const reports: LongWaitEvent[] = [];
  subscriptions.push(l.events$.subscribe((e: LockEvent) => e.type === 'long-wait' && reports.push(e)));
  return reports;
}

describe('long-wait events on Redis', () => {
  it('report a permit wait behind another process with the lock as Redis keeps it (permits used, holders, the line)', async () => {
    const holder = lockerOn(server.port);
    const waiter = lockerOn(server.port, { longWait: 120 });
    const reports = longWaitsOf(waiter);
    const held = await firstValueFrom(holder.acquirePermit('pool-long', { limit: 3, permits: 3, ttl: 3_000 }));
    const waited = firstValueFrom(waiter.acquirePermit('pool-long', { limit: 3, permits: 2, waitTimeout: 10_000 }));
    await sleep(450);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const report of reports) {
      expect(report).toMatchObject({ key: 'pool-long', heldHere: false, permits: { used: 3, limit: 3, weight: 2, holders: 1, waiting: 1 } });
      expect(report.holder).toBeUndefined();
      expect(report.error).toBeUndefined();
    }
    await held.release();
    await (await waited).release();
  });

  it('name the holder another process keeps the key for, its TTL and the line, seen for longer at each report', async () => {
    const holder = lockerOn(server.port);
    const waiter = lockerOn(server.port, { longWait: 120 });
    const reports = longWaitsOf(waiter);
    const lease = await firstValueFrom(holder.acquire('held-long', { ttl: 3_000 }));
    const waited = firstValueFrom(waiter.acquire('held-long', { waitTimeout: 10_000 }));
    await sleep(700);
    expect(reports.length).toBeGreaterThanOrEqual(3);
    for (const report of reports) {
      expect(report).toMatchObject({ key: 'held-long', heldHere: false, holder: { token: lease.token } });
      expect(report.error).toBeUndefined();
      expect(report.holder!.ttlMs).toBeGreaterThan(0);
      expect(report.holder!.ttlMs).toBeLessThanOrEqual(3_000);
    }
    // the waiter is in Redis's line behind the holder
    expect(reports.at(-1)!.holder!.waiting).toBe(1);
    expect(reports.at(-1)!.holder!.seenForMs).toBeGreaterThan(reports[0]!.holder!.seenForMs);
    await lease.release();
    await (await waited).release();
  });

  it("show a slow link: each read takes at least the link's delay, the holder still named", async () => {
    proxy = await delayProxy(server.port, 150);
    const holder = lockerOn(server.port);
    const waiter = lockerOn(proxy.port, { longWait: 100, commandTimeout: 2_000 });
    const reports = longWaitsOf(waiter);
    const lease = await firstValueFrom(holder.acquire('slow-link', { ttl: 5_000 }));
    const waited = firstValueFrom(waiter.acquire('slow-link', { waitTimeout: 10_000 }));
    await sleep(900);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const report of reports) {
      expect(report.storeReadMs).toBeGreaterThanOrEqual(145);
      expect(report.holder?.token).toBe(lease.token);
    }
    await lease.release();
    await (await waited).release();
  });

  it('show a frozen server: the read fails with LockStoreError and names no holder', async () => {
    const l = lockerOn(server.port, { longWait: 100, commandTimeout: 150 });
    const reports = longWaitsOf(l);
    // this locker's own holder keeps the key: its waiter waits in the local line, without polling
    const lease = await firstValueFrom(l.acquire('frozen', { ttl: 10_000 }));
    const waited = firstValueFrom(l.acquire('frozen', { waitTimeout: 10_000 }));
    server.pause();
    try {
      await sleep(700);
    } finally {
      server.resume();
    }
    const failed = reports.filter((r) => r.error !== undefined);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const report of failed) {
      expect(isLockStoreError(report.error)).toBe(true);
      expect(report.error).toMatchObject({ operation: 'inspect', key: 'frozen' });
      expect(report.holder).toBeUndefined();
      expect(report.heldHere).toBe(true);
      expect(report.storeReadMs).toBeGreaterThanOrEqual(145);
    }
    await lease.release();
    await (await waited).release();
  });
});
