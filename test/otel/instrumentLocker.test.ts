/**
 * rxjs-lock/otel on a real Redis: a locker's acquisitions, waits, holds, renewals, losses and
 * releases arrive as OpenTelemetry metrics and spans, read back through the SDK's own in-memory
 * reader and exporter.
 */
import type { Attributes } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { firstValueFrom, lastValueFrom, NEVER, of, timer } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, type Locker } from '../../src/index.js';
import { instrumentLocker, type LockerInstrumentation } from '../../src/otel.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** Collects on demand (no export interval). */
class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

let reader: OnDemandReader;
let meterProvider: MeterProvider;
let spans: InMemorySpanExporter;
let tracerProvider: BasicTracerProvider;
let locker: Locker;
let instrumentation: LockerInstrumentation;

beforeEach(() => {
  reader = new OnDemandReader();
  meterProvider = new MeterProvider({ readers: [reader] });
  spans = new InMemorySpanExporter();
  tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const client = connect(suite.server);
  const store = new RedisLockStore(client);
  locker = createLocker({ store, ttl: 2_000 });
  instrumentation = instrumentLocker(locker, { meterProvider, tracerProvider, keyGroup: (key) => key.split(':')[0] });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
});
afterEach(async () => {
  instrumentation.stop();
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
});

async function collect(): Promise<ResourceMetrics> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return resourceMetrics;
}

/** The data points of metric `name` whose attributes include `where`. */
function points<T>(metrics: ResourceMetrics, name: string, where: Attributes = {}): Array<DataPoint<T>> {
  const metric = metrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  const all = (metric?.dataPoints ?? []) as Array<DataPoint<T>>;
  return all.filter((p) => Object.entries(where).every(([k, v]) => p.attributes[k] === v));
}
const total = (metrics: ResourceMetrics, name: string, where: Attributes = {}) => points<number>(metrics, name, where).reduce((n, p) => n + p.value, 0);
const histogramCount = (metrics: ResourceMetrics, name: string, where: Attributes = {}) =>
  points<Histogram>(metrics, name, where).reduce((n, p) => n + p.value.count, 0);
const spansNamed = (name: string): ReadableSpan[] => spans.getFinishedSpans().filter((s) => s.name === name);

describe('instrumentLocker', () => {
  it('records acquisitions, waits and holds as metrics, with the key group and no key', async () => {
    const first = await firstValueFrom(locker.acquire('order:1'));
    const second = firstValueFrom(locker.acquire('order:1'));
    await sleep(30);
    await first.release();
    await (await second).release();
    await lastValueFrom(of(1).pipe(locker.withLock('invoice:7')));

    const m = await collect();
    expect(total(m, 'rxjs_lock.acquisitions', { 'rxjs_lock.outcome': 'acquired' })).toBe(3);
    expect(total(m, 'rxjs_lock.acquisitions', { 'rxjs_lock.key_group': 'order' })).toBe(2);
    expect(total(m, 'rxjs_lock.acquisitions', { 'rxjs_lock.key_group': 'invoice' })).toBe(1);
    expect(histogramCount(m, 'rxjs_lock.acquire.wait_time', { 'rxjs_lock.outcome': 'acquired' })).toBe(3);
    expect(
      histogramCount(m, 'rxjs_lock.hold.duration', { 'rxjs_lock.outcome': 'released' }) +
        histogramCount(m, 'rxjs_lock.hold.duration', { 'rxjs_lock.outcome': 'passed' }),
    ).toBe(3);
    expect(total(m, 'rxjs_lock.releases')).toBe(3);
    // The second waited behind the first: its wait is in the histogram's sum.
    const waits = points<Histogram>(m, 'rxjs_lock.acquire.wait_time', { 'rxjs_lock.key_group': 'order' });
    expect(waits.reduce((n, p) => n + (p.value.sum ?? 0), 0)).toBeGreaterThanOrEqual(20);
    // No data point carries the key itself (one time series per key would be unbounded).
    const keyed = m.scopeMetrics
      .flatMap((s) => s.metrics)
      .flatMap((x) => (x.dataPoints as Array<{ attributes: Attributes }>).filter((p) => 'rxjs_lock.key' in p.attributes));
    expect(keyed).toEqual([]);
  });

  it('records timeouts, skips and their spans as errors', async () => {
    const holder = await firstValueFrom(locker.acquire('job:a'));
    await expect(firstValueFrom(locker.acquire('job:a', { waitTimeout: 30 }))).rejects.toMatchObject({ name: 'LockTimeoutError' });
    const other = createLocker({ store: new RedisLockStore(connect(suite.server)) });
    suite.closers.push(() => other.close());
    // a skip is another locker's event: instrument that one too
    const otherInstrumentation = instrumentLocker(other, { meterProvider, tracerProvider });
    suite.closers.push(() => otherInstrumentation.stop());
    expect(await lastValueFrom(of('work').pipe(other.withLock('job:a', { onBusy: 'skip' })), { defaultValue: 'skipped' })).toBe('skipped');
    await holder.release();

    const m = await collect();
    expect(total(m, 'rxjs_lock.acquisitions', { 'rxjs_lock.outcome': 'timed_out' })).toBe(1);
    expect(total(m, 'rxjs_lock.acquisitions', { 'rxjs_lock.outcome': 'skipped' })).toBe(1);
    expect(histogramCount(m, 'rxjs_lock.acquire.wait_time', { 'rxjs_lock.outcome': 'timed_out' })).toBe(1);
    const failedWaits = spansNamed('rxjs_lock.acquire').filter((s) => s.status.code === 2);
    expect(failedWaits.map((s) => s.status.message).sort()).toEqual(['skipped: the lock was held', 'timed out waiting for the lock']);
    expect(failedWaits.every((s) => s.attributes['rxjs_lock.key'] === 'job:a')).toBe(true);
    // the timed-out wait's span lasts about its wait
    const timedOut = failedWaits.find((s) => s.status.message?.startsWith('timed out'))!;
    const ms = (timedOut.endTime[0] - timedOut.startTime[0]) * 1000 + (timedOut.endTime[1] - timedOut.startTime[1]) / 1e6;
    expect(ms).toBeGreaterThanOrEqual(25);
  });

  /** A second locker, reporting long waits after 60 ms, instrumented with keys grouped by their first segment. */
  function instrumentedWaiter(): Locker {
    const client = connect(suite.server);
    const waiter = createLocker({ store: new RedisLockStore(client), longWait: 60 });
    const waiting = instrumentLocker(waiter, { meterProvider, tracerProvider, keyGroup: (key) => key.split(':')[0] });
    suite.closers.push(
      () => client.disconnect(),
      () => waiter.close(),
      () => waiting.stop(),
    );
    return waiter;
  }

  it('counts long waits by what they were behind, with the read time of each report', async () => {
    const waiter = instrumentedWaiter();
    const held = await firstValueFrom(locker.acquire('report:1'));
    const waited = firstValueFrom(waiter.acquire('report:1'));
    await sleep(250);
    await held.release();
    await (await waited).release();
    const m = await collect();
    const reports = total(m, 'rxjs_lock.long_waits', { 'rxjs_lock.cause': 'held', 'rxjs_lock.key_group': 'report' });
    expect(reports).toBeGreaterThanOrEqual(2);
    expect(histogramCount(m, 'rxjs_lock.long_wait.store_read_time', { 'rxjs_lock.cause': 'held' })).toBe(reports);
    expect(total(m, 'rxjs_lock.long_waits', { 'rxjs_lock.cause': 'store_failed' })).toBe(0);
  });

  it("counts a permit wait's long waits as held by the permits' holders, not as unknown", async () => {
    const waiter = instrumentedWaiter();
    const held = await firstValueFrom(locker.acquirePermit('pool:1', { limit: 1 }));
    const waited = firstValueFrom(waiter.acquirePermit('pool:1', { limit: 1 }));
    await sleep(250);
    await held.release();
    await (await waited).release();
    const m = await collect();
    expect(total(m, 'rxjs_lock.long_waits', { 'rxjs_lock.cause': 'held', 'rxjs_lock.key_group': 'pool' })).toBeGreaterThanOrEqual(2);
    expect(total(m, 'rxjs_lock.long_waits', { 'rxjs_lock.cause': 'unknown', 'rxjs_lock.key_group': 'pool' })).toBe(0);
  });

  it('spans each hold from grant to release, with fence, renewals and the release outcome', async () => {
    const lease = await firstValueFrom(locker.acquire('report:1', { ttl: 300 }));
    await sleep(350); // renewed at least once (every third of the TTL by default)
    await lease.release();
    const [hold] = spansNamed('rxjs_lock.hold');
    expect(hold).toBeDefined();
    expect(hold!.attributes).toMatchObject({
      'rxjs_lock.key': 'report:1',
      'rxjs_lock.fence': lease.fence,
      'rxjs_lock.lease_id': lease.id,
      'rxjs_lock.release_outcome': 'released',
    });
    expect(hold!.events.filter((e) => e.name === 'renewed').length).toBeGreaterThanOrEqual(1);
    const m = await collect();
    expect(total(m, 'rxjs_lock.renewals', { 'rxjs_lock.outcome': 'renewed' })).toBeGreaterThanOrEqual(1);
  });

  it('records a lost lease: the loss by reason, its hold time, and the hold span as an error', async () => {
    const lease = await firstValueFrom(locker.acquire('ledger:9', { ttl: 300 }));
    // Another owner takes the key behind the holder's back: the next renewal finds it taken.
    await suite.admin.set('lock:ledger:9', 'someone-else', 'PX', 10_000);
    const lost = await firstValueFrom(lease.lost$);
    expect(lost.reason).toBe('taken-over');
    const m = await collect();
    expect(total(m, 'rxjs_lock.losses', { 'rxjs_lock.reason': 'taken-over' })).toBe(1);
    expect(histogramCount(m, 'rxjs_lock.hold.duration', { 'rxjs_lock.outcome': 'lost' })).toBe(1);
    const [hold] = spansNamed('rxjs_lock.hold');
    expect(hold!.status).toMatchObject({ code: 2, message: lost.message });
    expect(hold!.events.some((e) => e.name === 'exception')).toBe(true);
  });

  it('ends the hold spans still open when the locker closes, and records nothing after stop()', async () => {
    const subscription = NEVER.pipe(locker.withLock('session:1')).subscribe({ error: () => undefined });
    await eventually(async () => (await suite.admin.exists('lock:session:1')) === 1, 2000);
    await locker.close();
    subscription.unsubscribe();
    expect(spansNamed('rxjs_lock.hold')).toHaveLength(1);

    instrumentation.stop();
    const another = createLocker({ store: new RedisLockStore(connect(suite.server)) });
    const stopped = instrumentLocker(another, { meterProvider, tracerProvider });
    stopped.stop();
    await lastValueFrom(timer(1).pipe(another.withLock('session:2')));
    await another.close();
    expect(spansNamed('rxjs_lock.acquire').filter((s) => s.attributes['rxjs_lock.key'] === 'session:2')).toEqual([]);
  });

  it('never breaks the locker: a throwing keyGroup or SDK loses its data point only', async () => {
    const throwing = createLocker({ store: new RedisLockStore(connect(suite.server)) });
    suite.closers.push(() => throwing.close());
    const broken = {
      getMeter: () => ({
        createCounter: () => ({
          add: () => {
            throw new Error('exporter down');
          },
        }),
        createHistogram: () => ({
          record: () => {
            throw new Error('exporter down');
          },
        }),
      }),
    } as unknown as MeterProvider;
    const watch = instrumentLocker(throwing, {
      meterProvider: broken,
      spans: false,
      keyGroup: () => {
        throw new Error('bad group');
      },
    });
    suite.closers.push(() => watch.stop());
    expect(await lastValueFrom(of(1, 2).pipe(throwing.withLock('safe:1')))).toBe(2);
    expect(await lastValueFrom(of(3).pipe(throwing.withLock('safe:1')))).toBe(3);
  });

  it('rejects options that are not what it says, naming them', () => {
    const bad: Array<[unknown, unknown, string]> = [
      [{}, undefined, 'locker'],
      [locker, { metrix: true }, 'options.metrix'],
      [locker, { spans: 'yes' }, 'spans'],
      [locker, { keyGroup: 'order' }, 'keyGroup'],
      [locker, { meterProvider: {} }, 'meterProvider'],
      [locker, { tracerProvider: 42 }, 'tracerProvider'],
      [locker, [], 'options'],
    ];
    for (const [target, options, option] of bad) {
      let error: unknown;
      try {
        instrumentLocker(target as Locker, options as never);
      } catch (e) {
        error = e;
      }
      expect(isLockOptionsError(error) && error.option).toBe(option);
    }
  });
});
