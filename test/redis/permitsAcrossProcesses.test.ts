/**
 * Semaphores and read-write locks across processes on a real Redis: worker processes (fixtures/
 * permitWorker.ts) record their critical sections on the machine-wide monotonic clock, and the
 * test checks them after the fact:
 * - a semaphore never has more than `limit` permits in use, also when a holder's process is killed
 *   mid-hold (its permits come back when its lease ends, not before);
 * - a write lock never overlaps a reader or another writer;
 * - the line is fair: a writer is not starved by readers that keep coming, and a 3-permit waiter
 *   is not starved by single-permit ones.
 */
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { PermitSection, PermitWorkerReport, PermitWorkerSettings } from '../fixtures/permitWorker.js';
import { exitOf, forkFixture, killIfRunning, messagesOf, within } from '../support/children.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const worker = fileURLToPath(new URL('../fixtures/permitWorker.ts', import.meta.url));
const suite = redisSuite();
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) killIfRunning(child);
});

type Settings = Omit<PermitWorkerSettings, 'port'>;

function start(settings: Settings) {
  const child = forkFixture(worker, 'PERMIT_WORKER', { ...settings, port: suite.server.port });
  children.push(child);
  return { child, next: messagesOf(child) };
}

/** Starts the workers together and collects their reports. */
async function runAll(all: Settings[]): Promise<PermitWorkerReport[]> {
  const workers = all.map(start);
  await within(Promise.all(workers.map((w) => w.next('ready'))), 20_000, 'workers ready');
  for (const w of workers) w.child.send('go');
  return within(Promise.all(workers.map((w) => w.next<PermitWorkerReport>('report'))), 60_000, 'reports');
}

/** The most weight in use at once, by a sweep over enter/exit events. */
function peak(sections: readonly PermitSection[], weightOf: (s: PermitSection) => number): number {
  const events = sections.flatMap((s) => [
    { at: BigInt(s.enter), delta: weightOf(s) },
    { at: BigInt(s.exit), delta: -weightOf(s) },
  ]);
  // exits before enters at the same instant: back-to-back sections do not overlap
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.delta - b.delta));
  let now = 0;
  let most = 0;
  for (const e of events) most = Math.max(most, (now += e.delta));
  return most;
}

const all = (reports: PermitWorkerReport[]) => reports.flatMap((r) => r.sections);

describe('a semaphore across processes', () => {
  it('3 processes × 3 loops, limit 3 with 1- and 2-permit holders: never more than 3 permits in use', async () => {
    const loops = [
      { kind: 'permit' as const, limit: 3, permits: 1, iterations: 12, holdMs: 2 },
      { kind: 'permit' as const, limit: 3, permits: 2, iterations: 12, holdMs: 2 },
      { kind: 'permit' as const, limit: 3, permits: 1, iterations: 12, holdMs: 2 },
    ];
    const reports = await runAll([0, 1, 2].map(() => ({ key: 'sem', ttl: 10_000, waitTimeout: 30_000, loops })));
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.reduce((n, r) => n + r.timeouts, 0)).toBe(0);
    const sections = all(reports);
    expect(sections).toHaveLength(3 * 3 * 12);
    expect(peak(sections, (s) => s.weight)).toBeLessThanOrEqual(3);
    // (the semaphore is not a mutex: permits were shared)
    expect(peak(sections, () => 1)).toBeGreaterThan(1);
  });

  it("a killed holder's permits come back when its lease ends, not before", async () => {
    const holder = start({
      key: 'killed',
      ttl: 1_500,
      waitTimeout: 5_000,
      loops: [],
      hold: { kind: 'permit', limit: 2, permits: 2, iterations: 1, holdMs: 0 },
    });
    await within(holder.next('ready'), 20_000, 'holder ready');
    holder.child.send('go');
    await within(holder.next('held'), 10_000, 'held');
    holder.child.kill('SIGKILL');
    await exitOf(holder.child, 5_000);
    const client = connect(suite.server);
    suite.closers.push(() => client.disconnect());
    const locker = createLocker({ store: new RedisLockStore(client), retry: { minDelay: 5, jitter: 10 } });
    suite.closers.push(() => locker.close());
    // the dead process's permits still count …
    const busy = await firstValueFrom(locker.acquirePermit('killed', { limit: 2, waitTimeout: 0 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(busy)).toBe(true);
    // … until its lease ends
    const lease = await firstValueFrom(locker.acquirePermit('killed', { limit: 2, permits: 2, waitTimeout: 5_000 }));
    expect(lease.held).toBe(true);
    await lease.release();
  });
});

describe('a read-write lock across processes', () => {
  it('2 processes of readers and writers: no writer ever overlaps a reader or a writer', async () => {
    const loops = [
      { kind: 'read' as const, iterations: 15, holdMs: 3 },
      { kind: 'read' as const, iterations: 15, holdMs: 3 },
      { kind: 'write' as const, iterations: 8, holdMs: 1 },
    ];
    const reports = await runAll([0, 1].map(() => ({ key: 'rw', ttl: 10_000, waitTimeout: 30_000, loops })));
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.reduce((n, r) => n + r.timeouts, 0)).toBe(0);
    const sections = all(reports);
    expect(sections).toHaveLength(2 * (15 + 15 + 8));
    // a writer weighs as much as every reader together could: more than 1 in use means a writer shared
    const big = 1_000;
    expect(peak(sections, (s) => (s.kind === 'write' ? big : 1))).toBeLessThan(big + 1);
    expect(
      peak(
        sections.filter((s) => s.kind === 'read'),
        () => 1,
      ),
    ).toBeGreaterThan(1);
  });

  it('fairness: a writer gets in while readers keep coming, and so does a 3-permit waiter among 1-permit ones', async () => {
    // Each reader process keeps 3 overlapping readers going, so the lock is never free of readers;
    // without a first-come, first-served line the writer would wait for all of them to stop.
    const readers = { key: 'fair-rw', ttl: 10_000, waitTimeout: 30_000, loops: [0, 1, 2].map(() => ({ kind: 'read' as const, iterations: 30, holdMs: 15 })) };
    const writer = { key: 'fair-rw', ttl: 10_000, waitTimeout: 30_000, loops: [{ kind: 'write' as const, iterations: 1, holdMs: 1, delayMs: 100 }] };
    const singles = {
      key: 'fair-sem',
      ttl: 10_000,
      waitTimeout: 30_000,
      loops: [0, 1, 2].map(() => ({ kind: 'permit' as const, limit: 3, iterations: 30, holdMs: 15 })),
    };
    const triple = {
      key: 'fair-sem',
      ttl: 10_000,
      waitTimeout: 30_000,
      loops: [{ kind: 'permit' as const, limit: 3, permits: 3, iterations: 1, holdMs: 1, delayMs: 100 }],
    };
    const reports = await runAll([readers, writer, singles, triple]);
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.reduce((n, r) => n + r.timeouts, 0)).toBe(0);
    for (const [stream, late] of [
      [reports[0]!, reports[1]!],
      [reports[2]!, reports[3]!],
    ] as const) {
      const lateSection = late.sections[0]!;
      // it ran before the stream of small holders was over: it was served in turn, not starved
      const lastSmall = stream.sections.reduce((m, s) => (BigInt(s.enter) > m ? BigInt(s.enter) : m), 0n);
      expect(BigInt(lateSection.enter)).toBeLessThan(lastSmall);
    }
  });
});
