/**
 * `long-wait` events: an acquisition that waits `longWait` ms is reported (and again every
 * `longWait` ms) with a fresh read of the key — who holds it, for how long this waiter has seen
 * that holder, how long the read took — and nothing is read or reported while nobody listens.
 * (On a real Redis, with a slow link and a frozen server: test/redis/longWait.test.ts.)
 */
import { firstValueFrom, type Subscription } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, MemoryLockStore, type LockEvent, type LongWaitEvent, type Locker } from '../../src/index.js';
import { coreOnly } from '../../src/store/capabilities.js';
import { sleep } from '../support/timing.js';

const open: Array<{ close(): Promise<void> }> = [];
const subscriptions: Subscription[] = [];
afterEach(async () => {
  for (const s of subscriptions.splice(0)) s.unsubscribe();
  for (const l of open.splice(0)) await l.close();
});

function locker(options: Parameters<typeof createLocker>[0]): Locker {
  const l = createLocker(options);
  open.push(l);
  return l;
}

function inspectCounting(): { store: MemoryLockStore; reads: { count: number } } {
  const store = new MemoryLockStore();
  const reads = { count: 0 };
  const inspect = store.inspect.bind(store);
  store.inspect = (key) => (reads.count++, inspect(key));
  return { store, reads };
}

function record(l: Locker): LockEvent[] {
  const events: LockEvent[] = [];
  subscriptions.push(l.events$.subscribe((e) => events.push(e)));
  return events;
}

const longWaits = (events: LockEvent[]): LongWaitEvent[] => events.filter((e): e is LongWaitEvent => e.type === 'long-wait');

describe('long-wait events', () => {
  it('report a wait behind another holder, again every longWait, with the holder and how long it has been seen', async () => {
    const store = new MemoryLockStore();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 100 });
    const events = record(waiter);
    const lease = await firstValueFrom(holder.acquire('report', { ttl: 5_000 }));
    const waited = firstValueFrom(waiter.acquire('report', { waitTimeout: 5_000 }));
    waited.catch(() => undefined); // (a failed assertion below closes the locker under it: no unhandled rejection)
    await sleep(480);
    const reports = longWaits(events);
    expect(reports.length).toBeGreaterThanOrEqual(3);
    for (const [i, report] of reports.entries()) {
      expect(report).toMatchObject({ key: 'report', heldHere: false, holder: { token: lease.token, waiting: 0 } });
      expect(report.holder!.ttlMs).toBeGreaterThan(4_000);
      expect(report.holder!.ttlMs).toBeLessThanOrEqual(5_000);
      expect(report.storeReadMs).toBeGreaterThanOrEqual(0);
      expect(report.error).toBeUndefined();
      expect(report.attempts).toBeGreaterThanOrEqual(1);
      // one report per longWait of waiting: the n-th comes after n × longWait
      expect(report.waitedMs).toBeGreaterThanOrEqual((i + 1) * 100);
      if (i > 0) {
        // (a report late on a loaded machine is followed by the next on schedule: the n-th
        // after n × longWait, asserted above, and never two for one period)
        expect(report.waitedMs).toBeGreaterThan(reports[i - 1]!.waitedMs);
        expect(report.holder!.seenForMs).toBeGreaterThan(reports[i - 1]!.holder!.seenForMs);
        expect(report.attempts).toBeGreaterThanOrEqual(reports[i - 1]!.attempts);
      }
    }
    expect(reports[0]!.holder!.seenForMs).toBe(0);
    await lease.release();
    const mine = await waited;
    const count = longWaits(events).length;
    await sleep(250);
    // none after the grant
    expect(longWaits(events).length).toBe(count);
    expect(events.findIndex((e) => e.type === 'acquired')).toBeGreaterThan(events.lastIndexOf(longWaits(events).at(-1)!));
    await mine.release();
  });

  it("say heldHere when one of this locker's own acquisitions holds the key", async () => {
    const l = locker({ longWait: 60 });
    const events = record(l);
    const lease = await firstValueFrom(l.acquire('mine'));
    const waited = firstValueFrom(l.acquire('mine', { waitTimeout: 5_000 }));
    await sleep(200);
    const reports = longWaits(events);
    expect(reports.length).toBeGreaterThanOrEqual(1);
    for (const report of reports) expect(report).toMatchObject({ heldHere: true, holder: { token: lease.token } });
    await lease.release();
    await (await waited).release();
  });

  it('a new holder starts a new seenForMs', async () => {
    const store = new MemoryLockStore();
    const [a, b] = [locker({ store }), locker({ store })];
    const waiter = locker({ store, longWait: 80 });
    const events = record(waiter);
    const first = await firstValueFrom(a.acquire('turns', { ttl: 5_000 }));
    // the waiter looks at the store once a second (its reports come every 80 ms all the same), so
    // b, which asks right after a's release, takes the key between two of its looks
    const waited = firstValueFrom(waiter.acquire('turns', { waitTimeout: 5_000, retry: { minDelay: 1_000, jitter: 1 } }));
    await sleep(260);
    await first.release();
    const second = await firstValueFrom(b.acquire('turns', { waitTimeout: 0 }));
    await sleep(260);
    const reports = longWaits(events);
    const byA = reports.filter((r) => r.holder?.token === first.token);
    const byB = reports.filter((r) => r.holder?.token === second.token);
    expect(byA.length).toBeGreaterThanOrEqual(2);
    expect(byA.at(-1)!.holder!.seenForMs).toBeGreaterThan(0);
    expect(byB.length).toBeGreaterThanOrEqual(2);
    expect(byB[0]!.holder!.seenForMs).toBe(0);
    expect(reports.indexOf(byB[0]!)).toBeGreaterThan(reports.indexOf(byA.at(-1)!));
    await second.release();
    await (await waited).release();
  });

  it('read nothing and report nothing while nobody listens to events$', async () => {
    const { store, reads } = inspectCounting();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 20 });
    const lease = await firstValueFrom(holder.acquire('quiet'));
    const waited = firstValueFrom(waiter.acquire('quiet', { waitTimeout: 5_000 }));
    await sleep(200);
    expect(reads.count).toBe(0);
    // someone listens from now on: the next acquisition is watched
    const events = record(waiter);
    const watched = firstValueFrom(waiter.acquire('quiet', { waitTimeout: 5_000 }));
    await sleep(200);
    expect(reads.count).toBeGreaterThan(0);
    expect(longWaits(events).length).toBeGreaterThan(0);
    await lease.release();
    await (await waited).release();
    await (await watched).release();
  });

  it('are never sent with longWait: Infinity', async () => {
    const { store, reads } = inspectCounting();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: Infinity });
    const events = record(waiter);
    const lease = await firstValueFrom(holder.acquire('never'));
    const waited = firstValueFrom(waiter.acquire('never', { waitTimeout: 5_000 }));
    await sleep(150);
    expect(longWaits(events)).toEqual([]);
    expect(reads.count).toBe(0);
    await lease.release();
    await (await waited).release();
  });

  it('carry no holder and no read time on a store that cannot be inspected', async () => {
    const store = coreOnly(new MemoryLockStore());
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 60 });
    const events = record(waiter);
    const lease = await firstValueFrom(holder.acquire('blind'));
    const waited = firstValueFrom(waiter.acquire('blind', { waitTimeout: 5_000 }));
    await sleep(200);
    const reports = longWaits(events);
    expect(reports.length).toBeGreaterThanOrEqual(1);
    for (const report of reports) {
      expect(report.holder).toBeUndefined();
      expect(report.storeReadMs).toBeUndefined();
      expect(report.heldHere).toBe(false);
    }
    await lease.release();
    await (await waited).release();
  });

  it('end with the wait: a timed-out acquisition is reported no more, and the sweep stops', async () => {
    const { store, reads } = inspectCounting();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 40 });
    const events = record(waiter);
    const lease = await firstValueFrom(holder.acquire('ends'));
    await expect(firstValueFrom(waiter.acquire('ends', { waitTimeout: 150 }))).rejects.toThrow();
    const count = reads.count;
    expect(count).toBeGreaterThan(0);
    await sleep(200);
    expect(reads.count).toBe(count);
    expect(events.findIndex((e) => e.type === 'timed-out')).toBeGreaterThan(events.lastIndexOf(longWaits(events).at(-1)!));
    await lease.release();
  });

  it.each([0, -1, 1.5, '100', null, Number.NaN, 2 ** 31])('reject longWait %s with a LockOptionsError naming it', (longWait) => {
    let error: unknown;
    try {
      createLocker({ longWait: longWait as number });
    } catch (e) {
      error = e;
    }
    expect(isLockOptionsError(error)).toBe(true);
    expect((error as Error).message).toContain('longWait');
    expect((error as Error).message).toContain('or Infinity');
  });
});

describe('long-wait events of shared locks (permits, read-write locks)', () => {
  it('report a permit wait with the lock as the store reads it: permits used of the limit, holders, waiters, what it asks for', async () => {
    const store = new MemoryLockStore();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 100 });
    const events = record(waiter);
    const held = await firstValueFrom(holder.acquirePermit('pool', { limit: 2, permits: 2, ttl: 5_000 }));
    const waited = firstValueFrom(waiter.acquirePermit('pool', { limit: 2, waitTimeout: 5_000 }));
    await sleep(350);
    const reports = longWaits(events);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const report of reports) {
      expect(report).toMatchObject({ key: 'pool', heldHere: false, permits: { used: 2, limit: 2, weight: 1, holders: 1, waiting: 1 } });
      expect(report.holder).toBeUndefined();
      expect(report.storeReadMs).toBeGreaterThanOrEqual(0);
    }
    await held.release();
    await (await waited).release();
    const after = longWaits(events).length;
    await sleep(250);
    // granted: no more reports
    expect(longWaits(events).length).toBe(after);
  });

  it("say when one of the locker's own acquisitions holds the lock (a writer waiting behind this locker's reader)", async () => {
    const store = new MemoryLockStore();
    const l = locker({ store, longWait: 80 });
    const events = record(l);
    const reader = await firstValueFrom(l.acquireReadLock('doc'));
    const writer = firstValueFrom(l.acquireWriteLock('doc', { waitTimeout: 5_000 }));
    await sleep(250);
    const reports = longWaits(events);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    expect(reports[0]).toMatchObject({ key: 'doc', heldHere: true, permits: { used: 1, holders: 1, waiting: 1, weight: 2 ** 31 - 1 } });
    await reader.release();
    await (await writer).release();
  });

  it('a shared wait that ends (timed out, or unsubscribed) is reported no more', async () => {
    const store = new MemoryLockStore();
    const holder = locker({ store });
    const waiter = locker({ store, longWait: 50 });
    const events = record(waiter);
    const held = await firstValueFrom(holder.acquirePermit('gone', { limit: 1, ttl: 5_000 }));
    await expect(firstValueFrom(waiter.acquirePermit('gone', { limit: 1, waitTimeout: 180 }))).rejects.toThrow(/gone/);
    const cancelled = waiter.acquirePermit('gone', { limit: 1, waitTimeout: 5_000 }).subscribe({ error: () => undefined });
    await sleep(130);
    cancelled.unsubscribe();
    const seen = longWaits(events).length;
    expect(seen).toBeGreaterThanOrEqual(4);
    await sleep(200);
    expect(longWaits(events).length).toBe(seen);
    await held.release();
  });
});
