/**
 * The documentation's code samples (docs/examples, shown on the site by snippet imports) run here,
 * so a sample that no longer compiles (npm test type-checks them) or no longer does what its page
 * says fails the suite. Redis samples run against a private server (REDIS_URL).
 */
import { MeterProvider, InMemoryMetricExporter, AggregationTemporality, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { metrics } from '@opentelemetry/api';
import { lastValueFrom, of } from 'rxjs';
import { createLocker } from 'rxjs-lock';
import { describe, expect, it } from 'vitest';
import { applyPayments, type Payment } from '../../docs/examples/eventPipeline.js';
import { writeLedger } from '../../docs/examples/fencedWrite.js';
import { firstLock } from '../../docs/examples/firstLock.js';
import { migrateAll } from '../../docs/examples/migrating.js';
import { instrumented, logLockEvents } from '../../docs/examples/observability.js';
import { redisLock } from '../../docs/examples/redisLock.js';
import { digestInstance } from '../../docs/examples/scheduledJob.js';
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
    const skipped = await applyPayments(payments, async (payment) => {
      expect(busy.has(payment.accountId)).toBe(false);
      busy.add(payment.accountId);
      await new Promise((resolve) => setTimeout(resolve, 2));
      order.push(payment.id);
      busy.delete(payment.accountId);
    }, locker).finally(() => locker.close());
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
