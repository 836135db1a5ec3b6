/**
 * The bench's semaphore-hot and read-mostly figures (bench/metrics.ts, bench/workloads.ts,
 * bench/libraries.ts, bench/targets.ts): pure functions, checked on hand-made critical sections,
 * worker reports and result rows. The bench itself is run by `npm run bench`, not here.
 */
import { describe, expect, it } from 'vitest';
import type { LockAdapter, SharedLockAdapter } from '../../bench/adapters/types.js';
import { entriesFor, primitiveOf, type BenchEntry } from '../../bench/libraries.js';
import { buildRow, concurrencyOf, sharedViolation } from '../../bench/metrics.js';
import type { Role, WorkerReport } from '../../bench/protocol.js';
import type { ResultRow } from '../../bench/results.js';
import { scenarioSpecs, type ScenarioSpec } from '../../bench/scenarios.js';
import { evaluateTargets } from '../../bench/targets.js';
import { rolesOf, takerFor } from '../../bench/workloads.js';
import { benchSettings, ROW_ENV } from './fixtures.js';

const ENV = ROW_ENV;
const SETTINGS = benchSettings(['semaphore-hot', 'read-mostly'], true);
const spec = (name: 'semaphore-hot' | 'read-mostly'): ScenarioSpec => scenarioSpecs(SETTINGS).find((s) => s.name === name)!;

/** A critical section of key 0, ms on the shared clock. */
const section = (role: Role, enter: number, exit: number, keyIndex = 0) => ({ keyIndex, role, enter, exit });

describe('sections open at once', () => {
  it('counts the most holders at once; a section leaving as another enters is not beside it', () => {
    const four = [section('permit', 0, 10), section('permit', 1, 10), section('permit', 2, 10), section('permit', 3, 10), section('permit', 10, 20)];
    expect(concurrencyOf(four)).toEqual({ maxHolders: 4, maxReaders: 0, maxWriters: 0, writerOverlaps: 0 });
    expect(concurrencyOf([...four, section('permit', 9, 11)]).maxHolders).toBe(5);
  });

  it('lets readers share and counts every pair with a writer in it', () => {
    const fine = [section('read', 0, 10), section('read', 2, 12), section('read', 4, 8), section('write', 12, 15), section('read', 15, 20)];
    expect(concurrencyOf(fine)).toEqual({ maxHolders: 3, maxReaders: 3, maxWriters: 1, writerOverlaps: 0 });
    // a writer entering beside two readers, then a reader entering beside the writer: 3 pairs
    const broken = [section('read', 0, 10), section('read', 1, 10), section('write', 5, 15), section('read', 12, 13)];
    expect(concurrencyOf(broken).writerOverlaps).toBe(3);
    // two writers at once: one pair, 2 writers
    expect(concurrencyOf([section('write', 0, 5), section('write', 4, 6)])).toMatchObject({ maxWriters: 2, writerOverlaps: 1 });
  });

  it('keeps keys apart', () => {
    expect(concurrencyOf([section('write', 0, 10, 0), section('write', 0, 10, 1), section('read', 0, 10, 1)])).toEqual({
      maxHolders: 2,
      maxReaders: 1,
      maxWriters: 1,
      writerOverlaps: 1,
    });
  });

  it('names a semaphore above its limit and a writer beside anyone, and nothing else', () => {
    expect(sharedViolation(4, { maxHolders: 4, maxReaders: 0, maxWriters: 0, writerOverlaps: 0 })).toBeNull();
    expect(sharedViolation(4, { maxHolders: 5, maxReaders: 0, maxWriters: 0, writerOverlaps: 0 })).toBe('5 holders at once on a semaphore of 4');
    expect(sharedViolation(null, { maxHolders: 30, maxReaders: 30, maxWriters: 1, writerOverlaps: 0 })).toBeNull();
    expect(sharedViolation(null, { maxHolders: 2, maxReaders: 1, maxWriters: 1, writerOverlaps: 1 })).toMatch(/^a writer overlapped another holder \(1 pairs/);
  });
});

/** One worker's report of the given sections (ms), each waited `waitMs`. */
function report(sections: ReadonlyArray<{ role: Role; enter: number; exit: number; waitMs?: number }>): WorkerReport {
  return {
    loop: sections.map((_, i) => i % 4),
    keyIndex: sections.map(() => 0),
    role: sections.map((s) => s.role),
    enterNs: sections.map((s) => s.enter * 1e6),
    exitNs: sections.map((s) => s.exit * 1e6),
    waitMs: sections.map((s) => s.waitMs ?? 1),
    pairMs: [],
    finishedNs: 1e9,
    loops: 4,
    timeouts: 0,
    errors: 0,
    errorSamples: [],
    roundTrips: 3 * sections.length,
    gcPauseMaxMs: null,
    gcMajorPauses: null,
    storeKeys: [],
  };
}

const rowOf = (s: ScenarioSpec, entry: BenchEntry, reports: WorkerReport[]): ResultRow =>
  buildRow({
    spec: s,
    entry,
    reports,
    windowNs: 1e9,
    commandsBefore: {},
    commandsAfter: {},
    orphanedKeys: null,
    serverCpuUs: null,
    clusterBus: null,
    noise: undefined,
    env: ENV,
  });

const RXJS_LOCK: BenchEntry = { library: 'rxjs-lock', variant: 'default', options: {} };

describe('rows of the shared-lock scenarios', () => {
  it('gives a semaphore at its limit its figures, and fails one above it', () => {
    const atLimit = [0, 1, 2, 3].map((i) => ({ role: 'permit' as const, enter: 10 + i, exit: 20 }));
    const ok = rowOf(spec('semaphore-hot'), RXJS_LOCK, [report(atLimit), report([{ role: 'permit', enter: 20, exit: 30 }])]);
    expect(ok).toMatchObject({ status: 'ok', note: null, permitLimit: 4, maxHolders: 4, overlaps: null, acquisitions: 5 });

    const above = rowOf(spec('semaphore-hot'), RXJS_LOCK, [report(atLimit), report([{ role: 'permit', enter: 15, exit: 30 }])]);
    expect(above.status).toBe('failed');
    expect(above.note).toBe('5 holders at once on a semaphore of 4');
    expect(above.maxHolders).toBe(5);
  });

  it('splits read-mostly into reads and writes, and fails a writer beside a reader', () => {
    const sections = [
      { role: 'read' as const, enter: 0, exit: 10, waitMs: 2 },
      { role: 'read' as const, enter: 1, exit: 10, waitMs: 4 },
      { role: 'write' as const, enter: 10, exit: 12, waitMs: 9 },
    ];
    const ok = rowOf(spec('read-mostly'), RXJS_LOCK, [report(sections)]);
    expect(ok).toMatchObject({
      status: 'ok',
      reads: 2,
      writes: 1,
      maxReaders: 2,
      maxWriters: 1,
      writerOverlaps: 0,
      readWaitP50Ms: 2,
      readWaitP99Ms: 4,
      writeWaitP50Ms: 9,
      overlaps: null,
      permitLimit: null,
    });

    const broken = rowOf(spec('read-mostly'), RXJS_LOCK, [report([...sections, { role: 'write', enter: 5, exit: 6 }])]);
    expect(broken.status).toBe('failed');
    expect(broken.note).toMatch(/a writer overlapped another holder \(2 pairs/);
  });

  it('counts overlaps in the mutex run of read-mostly, as a mutex should have none', () => {
    const mutex = entriesFor('read-mostly', undefined).find((e) => e.variant === 'mutex')!;
    const row = rowOf(spec('read-mostly'), mutex, [
      report([
        { role: 'read', enter: 0, exit: 5 },
        { role: 'write', enter: 5, exit: 8 },
      ]),
    ]);
    expect(row).toMatchObject({ status: 'ok', overlaps: 0, maxReaders: 1, writerOverlaps: 0 });
  });
});

describe('what the shared-lock scenarios run', () => {
  it('runs rxjs-lock against redis-semaphore on the semaphore, and rxjs-lock against its own mutex on read-mostly', () => {
    expect(entriesFor('semaphore-hot', undefined).map((e) => `${e.library}/${e.variant}`)).toEqual(['rxjs-lock/default', 'redis-semaphore/default']);
    const readMostly = entriesFor('read-mostly', undefined);
    expect(readMostly.map((e) => `${e.library}/${e.variant}`)).toEqual(['rxjs-lock/default', 'rxjs-lock/mutex']);
    expect(readMostly.map((e) => primitiveOf(spec('read-mostly'), e).kind)).toEqual(['read-write', 'mutex']);
    expect(primitiveOf(spec('semaphore-hot'), RXJS_LOCK)).toEqual({ kind: 'semaphore', limit: 4 });
    // the mutex variant stays out of the other scenarios
    expect(entriesFor('hot-key-1ms', undefined).some((e) => e.variant === 'mutex')).toBe(false);
  });

  it('draws the same roles for the same worker and loop, about 10% writes, and other roles elsewhere', () => {
    const { primitive } = spec('read-mostly');
    const draw = (worker: number, loop: number, n: number) => {
      const next = rolesOf(primitive, worker, loop);
      return Array.from({ length: n }, next);
    };
    expect(draw(3, 2, 200)).toEqual(draw(3, 2, 200));
    expect(draw(3, 2, 200)).not.toEqual(draw(3, 1, 200));
    expect(draw(3, 2, 200)).not.toEqual(draw(2, 2, 200));
    const writes = draw(0, 0, 10_000).filter((r) => r === 'write').length;
    expect(writes).toBeGreaterThan(900);
    expect(writes).toBeLessThan(1_100);
    expect(draw(0, 0, 3)).toEqual(expect.arrayContaining([expect.stringMatching(/^(read|write)$/)]));
    expect(rolesOf(spec('semaphore-hot').primitive, 0, 0)()).toBe('permit');
  });

  it('refuses a library without the lock the scenario takes, naming what is missing', () => {
    const mutexOnly = { acquire: () => Promise.reject(new Error('unused')) } as unknown as LockAdapter;
    expect(() => takerFor(mutexOnly, spec('semaphore-hot').primitive, 'redlock')).toThrow('redlock has no permit lock for a semaphore scenario');
    const permitsOnly: SharedLockAdapter = { offers: ['permit'], storeKey: (n) => n, acquire: () => Promise.reject(new Error('unused')) };
    expect(() => takerFor({ ...mutexOnly, shared: permitsOnly }, spec('read-mostly').primitive, 'redis-semaphore')).toThrow(
      'redis-semaphore has no read or write lock for a read-write scenario',
    );
    expect(() => takerFor({ ...mutexOnly, shared: permitsOnly }, spec('semaphore-hot').primitive, 'redis-semaphore')).not.toThrow();
  });

  it('hands the take of each role to the library', async () => {
    const takes: string[] = [];
    const shared: SharedLockAdapter = {
      offers: ['permit', 'read', 'write'],
      storeKey: (n) => n,
      acquire: (name, take) => {
        takes.push(`${name}:${take.kind}${take.kind === 'permit' ? `/${take.limit}` : ''}`);
        return Promise.resolve({ release: () => Promise.resolve() });
      },
    };
    const adapter = { shared, acquire: () => Promise.reject(new Error('mutex taken')) } as unknown as LockAdapter;
    const limits = { waitTimeoutMs: 1, ttlMs: 1 };
    await takerFor(adapter, spec('semaphore-hot').primitive, 'x')('k', 'permit', limits);
    const readWrite = takerFor(adapter, spec('read-mostly').primitive, 'x');
    await readWrite('k', 'read', limits);
    await readWrite('k', 'write', limits);
    expect(takes).toEqual(['k:permit/4', 'k:read', 'k:write']);
  });
});

/** A result row with only the figures these targets read. */
function row(scenario: string, library: string, variant: string, figures: Partial<ResultRow>): ResultRow {
  return { scenario, library, variant, label: library, status: 'ok', note: null, env: ENV, ...figures } as ResultRow;
}

describe('shared-lock targets', () => {
  const judged = (rows: ResultRow[], scenario: string) => evaluateTargets(rows).filter((t) => t.scenario === scenario);

  it('judges the semaphore against redis-semaphore: throughput and Jain at least its, round trips at most', () => {
    const peer = row('semaphore-hot', 'redis-semaphore', 'default', { acquisitionsPerSec: 800, jain: 0.87, roundTripsPerAcquisition: 4 });
    const better = row('semaphore-hot', 'rxjs-lock', 'default', { acquisitionsPerSec: 800, jain: 0.99, roundTripsPerAcquisition: 4 });
    expect(judged([better, peer], 'semaphore-hot').map((t) => t.status)).toEqual(['PASS', 'PASS', 'PASS']);
    const worse = row('semaphore-hot', 'rxjs-lock', 'default', { acquisitionsPerSec: 799, jain: 0.86, roundTripsPerAcquisition: 4.1 });
    const results = judged([worse, peer], 'semaphore-hot');
    expect(results.map((t) => t.status)).toEqual(['MISS', 'MISS', 'MISS']);
    expect(results[0]!.measured).toBe('799 vs 800: ×1.00');
  });

  it('misses every semaphore target, saying why, when rxjs-lock failed or redis-semaphore did not run', () => {
    const failed = row('semaphore-hot', 'rxjs-lock', 'default', { status: 'failed', note: '5 holders at once on a semaphore of 4', acquisitionsPerSec: 900 });
    const peer = row('semaphore-hot', 'redis-semaphore', 'default', { acquisitionsPerSec: 800, jain: 0.87, roundTripsPerAcquisition: 4 });
    expect(judged([failed, peer], 'semaphore-hot').map((t) => `${t.status} ${t.measured}`)).toEqual(
      Array(3).fill('MISS rxjs-lock failed: 5 holders at once on a semaphore of 4'),
    );
    const alone = row('semaphore-hot', 'rxjs-lock', 'default', { acquisitionsPerSec: 800, jain: 1, roundTripsPerAcquisition: 1 });
    expect(judged([alone], 'semaphore-hot').map((t) => t.measured)).toEqual(Array(3).fill('redis-semaphore did not run'));
  });

  it('wants the read-write lock at twice its mutex on read-mostly', () => {
    const mutex = row('read-mostly', 'rxjs-lock', 'mutex', { acquisitionsPerSec: 400 });
    expect(judged([row('read-mostly', 'rxjs-lock', 'default', { acquisitionsPerSec: 800 }), mutex], 'read-mostly').map((t) => [t.status, t.ratio])).toEqual([
      ['PASS', 2],
    ]);
    expect(judged([row('read-mostly', 'rxjs-lock', 'default', { acquisitionsPerSec: 799 }), mutex], 'read-mostly')[0]!.status).toBe('MISS');
    expect(judged([row('read-mostly', 'rxjs-lock', 'default', { acquisitionsPerSec: 800 })], 'read-mostly')[0]!.measured).toBe('rxjs-lock (mutex) did not run');
  });
});
