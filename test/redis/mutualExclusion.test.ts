/**
 * Mutual exclusion across processes on a real Redis: several worker processes × concurrent loops
 * contend for one key, every critical section is recorded on the machine-wide monotonic clock,
 * and the overlap detector checks that no two ever ran at once. A deliberately broken run (a
 * TTL of 1 ms with 5 ms holds) shows the detector does catch overlaps.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOverlaps, type CriticalSection } from '../../src/testing.js';
import type { ContenderReport, ContenderSettings } from '../fixtures/contender.js';
import { EmbeddedRedis } from '../support/redis.js';

const contender = fileURLToPath(new URL('../fixtures/contender.ts', import.meta.url));
let server: EmbeddedRedis;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
});
afterAll(async () => server?.stop());

/** Forks `processes` contenders, starts them together, and collects their reports. */
async function contend(processes: number, settings: Omit<ContenderSettings, 'port'>): Promise<ContenderReport[]> {
  const children = Array.from({ length: processes }, () =>
    fork(contender, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, CONTENDER: JSON.stringify({ ...settings, port: server.port }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const ready = children.map(
    (child) =>
      new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`contender exited early with ${code}`)));
      }),
  );
  await Promise.all(ready);
  const reports = children.map(
    (child) =>
      new Promise<ContenderReport>((resolve, reject) => {
        child.once('message', (report) => resolve(report as ContenderReport));
        child.once('exit', (code) => reject(new Error(`contender exited with ${code} before reporting`)));
      }),
  );
  children.forEach((child) => child.send('go'));
  return Promise.all(reports);
}

const sectionsOf = (reports: ContenderReport[]): CriticalSection[] =>
  reports.flatMap((report, owner) => report.sections.map(([enter, exit]) => ({ enter: BigInt(enter), exit: BigInt(exit), owner: String(owner) })));

describe('mutual exclusion across processes', () => {
  it('4 processes × 4 loops × 40 acquisitions of one key: 0 overlaps', async () => {
    const reports = await contend(4, { key: 'exclusive', loops: 4, iterations: 40, holdMs: 1, ttl: 10_000 });
    const sections = sectionsOf(reports);
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.reduce((n, r) => n + r.timeouts, 0)).toBe(0);
    expect(sections).toHaveLength(4 * 4 * 40);
    // every process got the lock, and sections from different processes interleave
    expect(new Set(sections.map((s) => s.owner)).size).toBe(4);
    expect(findOverlaps(sections)).toEqual([]);
  });

  it('the detector catches a broken lock (ttl 1 ms, holds of 5 ms)', async () => {
    // (5 iterations: one overlap is all it needs; each takes ~0.4 s with a 1 ms TTL, see the closing note)
    const reports = await contend(3, { key: 'broken', loops: 2, iterations: 5, holdMs: 5, ttl: 1 });
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(findOverlaps(sectionsOf(reports)).length).toBeGreaterThan(0);
  });
});

describe('findOverlaps', () => {
  const s = (enter: number, exit: number): CriticalSection => ({ enter: BigInt(enter), exit: BigInt(exit) });
  it('accepts back-to-back sections and finds every overlapping pair, nested or partial', () => {
    expect(findOverlaps([s(0, 10), s(10, 20), s(25, 30)])).toEqual([]);
    expect(findOverlaps([s(0, 100), s(10, 20), s(30, 40)])).toHaveLength(2);
    expect(findOverlaps([s(0, 100), s(10, 50), s(30, 40)])).toHaveLength(3);
    expect(findOverlaps([s(0, 100), s(1, 99), s(2, 98), s(3, 97)])).toHaveLength(6);
    expect(findOverlaps([s(20, 30), s(0, 25)])).toEqual([{ first: s(0, 25), second: s(20, 30) }]);
  });
});
