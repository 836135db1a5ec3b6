/**
 * The documentation's code samples (docs/examples, shown on the site by snippet imports) run here,
 * so a sample that no longer compiles (npm test type-checks them) or no longer does what its page
 * says fails the suite. Redis samples run against a private server (REDIS_URL).
 */
import { MeterProvider, InMemoryMetricExporter, AggregationTemporality, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { metrics } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { createLocker, isLockLostError, LockStoreError, type LongWaitEvent } from 'rxjs-lock';
import { FencedResource, RedisLockStore } from 'rxjs-lock/redis';
import { describe, expect, it } from 'vitest';
import { applyPayments, type Payment } from '../../docs/examples/eventPipeline.js';
import { writeLedger } from '../../docs/examples/fencedWrite.js';
import { firstLock } from '../../docs/examples/firstLock.js';
import { printerLocker, stalledHolder } from '../../docs/examples/lockDelay.js';
import { explainLongWait, logLongWaits } from '../../docs/examples/longWait.js';
import { migrateAll } from '../../docs/examples/migrating.js';
import { migrateOtherKinds } from '../../docs/examples/migratingKinds.js';
import { accountsInstance, transfer } from '../../docs/examples/multiKeyLock.js';
import { instrumented, logLockEvents } from '../../docs/examples/observability.js';
import { withPriceList } from '../../docs/examples/readWriteLock.js';
import { redisLock } from '../../docs/examples/redisLock.js';
import { digestInstance } from '../../docs/examples/scheduledJob.js';
import { renderInstance, type RenderJob } from '../../docs/examples/semaphore.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();
const useSuiteRedis = () => (process.env.REDIS_URL = `redis://${suite.server.host}:${suite.server.port}`);

describe('getting started', () => {
  it('first lock: the second caller waits for the first to finish', async () => {
    const lines: string[] = [];
    await firstLock((line) => lines.push(line));
    expect(lines).toEqual(['A: sending invoice 42', 'A: sent invoice 42', 'B: sending invoice 42', 'B: sent invoice 42']);
  });

  it('on Redis: runs the work, gives the key back, and closes its connections', async () => {
    useSuiteRedis();
    const lines: string[] = [];
    const before = Number(/connected_clients:(\d+)/.exec(await suite.admin.info('clients'))![1]);
    await redisLock((line) => lines.push(line));
    expect(lines).toEqual(['sending invoice 42']);
    expect(await suite.admin.keys('*invoice*')).toEqual([]);
    const after = Number(/connected_clients:(\d+)/.exec(await suite.admin.info('clients'))![1]);
    expect(after).toBe(before);
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('other kinds of lock', () => {
  it('semaphore: two instances never hold more than the 4 permits, a big job counting 2', async () => {
    useSuiteRedis();
    let inUse = 0;
    let most = 0;
    const render = async (job: RenderJob) => {
      inUse += job.big ? 2 : 1;
      most = Math.max(most, inUse);
      await sleep(50);
      inUse -= job.big ? 2 : 1;
    };
    const jobs = (instance: string): RenderJob[] => Array.from({ length: 5 }, (_, i) => ({ id: `${instance}${i}`, big: i === 2 }));
    const lines: string[] = [];
    await Promise.all([renderInstance(jobs('a'), render, (l) => lines.push(l)), renderInstance(jobs('b'), render, (l) => lines.push(l))]);
    expect(lines).toEqual([]); // no job timed out
    expect(most).toBe(4); // the limit was reached, never passed
  });

  it('read-write lock: readers share the lock, and no write lands while one reads', async () => {
    useSuiteRedis();
    const raw = new FencedResource(suite.admin, 'prices');
    let reading = 0;
    let mostReading = 0;
    const outcome = await withPriceList(async (prices) => {
      await prices.write('v1');
      const read = () =>
        prices.read(async (seen) => {
          mostReading = Math.max(mostReading, ++reading);
          await sleep(50);
          const still = (await raw.read())?.value; // read again, without the lock
          reading--;
          return [seen, still];
        });
      return Promise.all([read(), read(), prices.write('v2'), read()]);
    });
    const [r1, r2, written, r3] = outcome;
    for (const [seen, still] of [r1, r2, r3] as string[][]) expect(still).toBe(seen);
    expect(written).toMatchObject({ accepted: true });
    expect(mostReading).toBeGreaterThanOrEqual(2);
    expect((await raw.read())?.value).toBe('v2');
  });

  it('multi-key: transfers in opposite directions from two instances neither deadlock nor lose an update', async () => {
    useSuiteRedis();
    await suite.admin.mset('balance:1', 100, 'balance:2', 100);
    const run = (from: string, to: string, amount: number) =>
      accountsInstance((redis, locker) => Promise.all(Array.from({ length: 4 }, () => transfer(redis, locker, from, to, amount))));
    const [a, b] = await Promise.all([run('1', '2', 10), run('2', '1', 5)]);
    expect([...a, ...b]).toEqual(Array(8).fill(true));
    expect(await suite.admin.mget('balance:1', 'balance:2')).toEqual(['80', '120']);
  });

  it('lock-delay: a stalled holder keeps the key ttl + lockDelay, a release frees it at once', async () => {
    useSuiteRedis();
    const timing = { ttl: 150, lockDelay: 300 };
    const { lost, waitedMs } = await stalledHolder(timing, () => undefined);
    expect(isLockLostError(lost) && lost.reason).toBe('expired');
    // (measured from the holder's work starting, a little after Redis set the key: some slack)
    expect(waitedMs).toBeGreaterThanOrEqual(timing.ttl + timing.lockDelay - 25);
    expect(await suite.admin.keys('lock:printer')).toEqual([]);
  });

  it('lock-delay: the printer locker keeps its key in Redis ttl + lockDelay, and a release deletes it', async () => {
    const redis = new Redis(`redis://${suite.server.host}:${suite.server.port}`);
    const store = new RedisLockStore(redis);
    const locker = printerLocker(store);
    suite.closers.push(
      () => redis.quit(),
      () => store.close(),
      () => locker.close(),
    );
    const lease = await firstValueFrom(locker.acquire('printer'));
    expect(lease.ttl).toBe(10_000);
    expect(await suite.admin.pttl('lock:printer')).toBeGreaterThan(14_000); // 10 s + 5 s
    expect(await lease.release()).toBe(true);
    expect(await suite.admin.exists('lock:printer')).toBe(0);
  });
});

describe('long waits', () => {
  it('reports a holder that keeps the key: the same token, seen for longer each time', async () => {
    useSuiteRedis();
    const connect = () => {
      const redis = new Redis(process.env.REDIS_URL!);
      const store = new RedisLockStore(redis);
      suite.closers.push(
        () => redis.quit(),
        () => store.close(),
      );
      return store;
    };
    const holder = createLocker({ store: connect() });
    const waiter = createLocker({ store: connect(), longWait: 50 });
    suite.closers.push(
      () => holder.close(),
      () => waiter.close(),
    );
    const lease = await firstValueFrom(holder.acquire('report'));
    const lines: string[] = [];
    const events: LongWaitEvent[] = [];
    const subscription = logLongWaits(waiter, (line) => lines.push(line));
    waiter.events$.subscribe((e) => e.type === 'long-wait' && events.push(e));
    const waited = firstValueFrom(waiter.acquire('report'));
    while (events.length < 2) await sleep(10);
    await lease.release();
    await (await waited).release();
    subscription.unsubscribe();
    expect(lines[0]).toMatch(new RegExp(`^report: waiting for \\d+ ms; held by ${lease.token} for at least 0 ms`));
    expect(events[1]!.holder!.token).toBe(lease.token);
    expect(events[1]!.holder!.seenForMs).toBeGreaterThan(0);
  });

  it('tells a failing or slow store apart from a holder', () => {
    const base = { type: 'long-wait', key: 'report', waitedMs: 5_000, attempts: 3, heldHere: false } as const;
    const error = new LockStoreError('report', 'inspect', 'connection lost');
    expect(explainLongWait({ ...base, error })).toMatch(/the store is failing/);
    expect(explainLongWait({ ...base, holder: null, storeReadMs: 900 })).toMatch(/the store is slow \(one read took 900 ms\)/);
    expect(explainLongWait({ ...base, holder: null, storeReadMs: 2 })).toMatch(/the key is free now/);
  });
});

describe('guides', () => {
  it('scheduled job: two instances fire three rounds each, the job runs once per round', async () => {
    useSuiteRedis();
    const runs: string[] = [];
    const job = async (by: string) => {
      runs.push(by);
      await new Promise((resolve) => setTimeout(resolve, 150)); // still running when the other instance fires
    };
    await Promise.all([digestInstance('a', 3, 400, job), digestInstance('b', 3, 400, job)]);
    expect(runs).toHaveLength(3);
  });

  it('event pipeline: one payment per account at a time, each account in arrival order', async () => {
    const payments: Payment[] = Array.from({ length: 12 }, (_, i) => ({ id: `p${i}`, accountId: `a${i % 3}`, amount: i }));
    const busy = new Set<string>();
    const order: string[] = [];
    const locker = createLocker();
    const skipped = await applyPayments(
      payments,
      async (payment) => {
        expect(busy.has(payment.accountId)).toBe(false);
        busy.add(payment.accountId);
        await new Promise((resolve) => setTimeout(resolve, 2));
        order.push(payment.id);
        busy.delete(payment.accountId);
      },
      locker,
    ).finally(() => locker.close());
    expect(skipped).toEqual([]);
    for (const account of ['a0', 'a1', 'a2']) {
      const ids = payments.filter((p) => p.accountId === account).map((p) => p.id);
      expect(order.filter((id) => ids.includes(id))).toEqual(ids);
    }
  });

  it('fencing: the write with the lease fence is accepted', async () => {
    useSuiteRedis();
    const result = await writeLedger('entry 1', () => undefined);
    expect(result).toMatchObject({ accepted: true });
  });

  it('migrating: the same critical section with redlock, redis-semaphore and rxjs-lock', async () => {
    useSuiteRedis();
    let runs = 0;
    expect(await migrateAll(async () => void runs++)).toEqual([true, true, true]);
    expect(runs).toBe(3);
  });

  it('migrating: semaphores and multi-resource locks with redis-semaphore, redlock and rxjs-lock', async () => {
    useSuiteRedis();
    let runs = 0;
    expect(await migrateOtherKinds(async () => void runs++)).toEqual(Array(6).fill(true));
    expect(runs).toBe(6);
  });

  it('operations: events as log lines and as OpenTelemetry metrics', async () => {
    const locker = createLocker();
    const lines: string[] = [];
    const subscription = logLockEvents(locker, { info: (_fields, message) => lines.push(message) });
    await lastValueFrom(of(1).pipe(locker.withLock('report')));
    subscription.unsubscribe();
    await locker.close();
    expect(lines).toEqual(['lock acquired', 'lock released']);

    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    try {
      await instrumented(async () => undefined);
      await reader.forceFlush();
      const names = exporter.getMetrics().flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics.map((metric) => metric.descriptor.name)));
      expect(names).toContain('rxjs_lock.acquisitions');
    } finally {
      await provider.shutdown();
      metrics.disable();
    }
  });
});
