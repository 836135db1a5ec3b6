/**
 * Multi-key locks across processes on a real Redis: worker processes × concurrent loops take
 * random overlapping sets of keys in random order. Sets are taken in one global order, so none
 * waits for another forever: with a generous wait there are no time-outs (a deadlock would end in
 * them), and every key's critical sections, recorded on the machine-wide monotonic clock, never
 * overlap.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findOverlaps, type CriticalSection } from '../../src/testing.js';
import type { SetContenderReport, SetContenderSettings } from '../fixtures/setContender.js';
import { exitOf, forkFixture, killIfRunning, messagesOf, within } from '../support/children.js';
import { redisSuite } from '../support/redisSuite.js';

const fixture = fileURLToPath(new URL('../fixtures/setContender.ts', import.meta.url));
const suite = redisSuite();

describe('multi-key locks across processes', () => {
  it('3 processes × 2 loops × 12 random overlapping sets of 6 keys: no time-out, no error, one holder per key at a time', async () => {
    const pool = ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => `sets:${name}`);
    const children = [1, 2, 3].map((seed) =>
      forkFixture(fixture, 'SET_CONTENDER', {
        port: suite.server.port,
        pool,
        loops: 2,
        iterations: 12,
        holdMs: 2,
        waitTimeout: 20_000,
        seed: seed * 7_919,
      } satisfies SetContenderSettings),
    );
    try {
      const inboxes = children.map((child) => messagesOf(child));
      await within(Promise.all(inboxes.map((next) => next('ready'))), 20_000, 'ready');
      children.forEach((child) => child.send('go'));
      const all = (await within(Promise.all(inboxes.map((next) => next<{ type: string; report: SetContenderReport }>('report'))), 50_000, 'reports')).map(
        (m) => m.report,
      );
      expect(all.flatMap((r) => r.errors)).toEqual([]);
      expect(all.reduce((sum, r) => sum + r.timeouts, 0)).toBe(0);
      expect(all.reduce((sum, r) => sum + r.sets, 0)).toBe(3 * 2 * 12);
      for (const key of pool) {
        const sections: CriticalSection[] = all.flatMap((r, owner) =>
          r.sections[key]!.map(([enter, exit]) => ({ enter: BigInt(enter), exit: BigInt(exit), owner: String(owner) })),
        );
        expect(findOverlaps(sections), key).toEqual([]);
      }
      // every key held by more than one process over the run: the sets did overlap
      expect(pool.every((key) => new Set(all.flatMap((r, owner) => (r.sections[key]!.length > 0 ? [owner] : []))).size > 1)).toBe(true);
      await Promise.all(children.map((child) => exitOf(child, 10_000)));
      expect(await suite.admin.keys('lock:*')).toEqual([]);
    } finally {
      children.forEach(killIfRunning);
    }
  });
});
