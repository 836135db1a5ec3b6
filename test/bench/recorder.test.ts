/**
 * The bench worker's Recorder (bench/workloads.ts) keeps every acquisition in typed columns of
 * fixed-size chunks and hands them to the report as plain arrays: what goes in comes out, in
 * order, across chunk boundaries, roles included.
 */
import { describe, expect, it } from 'vitest';
import type { Role } from '../../bench/protocol.js';
import { Recorder } from '../../bench/workloads.js';

describe('Recorder', () => {
  it('gives back every acquisition in order, across chunks, with its role', () => {
    const start = 1_000_000_000n;
    const rec = new Recorder(start, true);
    const roles: Role[] = ['lock', 'permit', 'read', 'write'];
    const n = 65_536 * 2 + 7;
    for (let i = 0; i < n; i++) {
      const t0 = start + BigInt(i) * 1000n;
      rec.add(i % 32, i % 5, roles[i % 4]!, t0, t0 + 500n, t0 + 800n, t0 + 900n);
    }
    const c = rec.columnsForReport();
    for (const column of [c.loop, c.keyIndex, c.role, c.enterNs, c.exitNs, c.waitMs, c.pairMs]) expect(column).toHaveLength(n);
    for (const i of [0, 1, 65_535, 65_536, 65_537, n - 1]) {
      expect(c.loop[i]).toBe(i % 32);
      expect(c.keyIndex[i]).toBe(i % 5);
      expect(c.role[i]).toBe(roles[i % 4]);
      expect(c.enterNs[i]).toBe(i * 1000 + 500);
      expect(c.exitNs[i]).toBe(i * 1000 + 800);
      expect(c.waitMs[i]).toBeCloseTo(0.0005, 9);
      expect(c.pairMs[i]).toBeCloseTo(0.0009, 9);
    }
  });

  it('records no pair times unless asked to, and nothing at all before the first acquisition', () => {
    const rec = new Recorder(0n, false);
    expect(rec.columnsForReport().enterNs).toEqual([]);
    rec.add(0, 0, 'lock', 0n, 1n, 2n, 3n);
    expect(rec.columnsForReport().pairMs).toEqual([]);
    expect(rec.columnsForReport().waitMs).toEqual([1e-6]);
  });
});
