/**
 * The references of the uncontended quorum scenarios (bench/libraries.ts, bench/targets.ts,
 * bench/report.ts): store-only (RedlockStore with no engine) and quorum-floor (the least a fenced
 * quorum lock pays) run there and nowhere else on a quorum, and the "pair p50 < redlock's" lines
 * give their ratios to redlock. Pure functions on hand-made result rows; the bench itself is run by
 * `npm run bench`, not here.
 */
import { describe, expect, it } from 'vitest';
import { entriesFor, type BenchEntry, type LibraryName } from '../../bench/libraries.js';
import { emptyRow } from '../../bench/metrics.js';
import { renderReport } from '../../bench/report.js';
import type { ResultRow } from '../../bench/results.js';
import { scenarioSpecs, type LockScenarioName, type ScenarioName } from '../../bench/scenarios.js';
import { evaluateTargets } from '../../bench/targets.js';
import { benchSettings, ROW_ENV } from './fixtures.js';

const QUORUM_UNCONTENDED = ['uncontended-3-nodes', 'uncontended-5-nodes'] as const;
const SPECS = scenarioSpecs(benchSettings(['uncontended', ...QUORUM_UNCONTENDED], true));

const librariesOf = (scenario: ScenarioName, only?: string[]) => entriesFor(scenario, only).map((e) => e.library);

describe('where the references run', () => {
  it('runs store-only and quorum-floor after rxjs-lock and redlock in the uncontended quorum scenarios', () => {
    for (const s of QUORUM_UNCONTENDED) expect(librariesOf(s)).toEqual(['rxjs-lock', 'redlock', 'store-only', 'quorum-floor']);
  });

  it('runs neither on the hot key of a quorum, on the cluster or on a shared lock', () => {
    for (const s of ['hot-key-3-nodes', 'hot-key-5-nodes'] as const) expect(librariesOf(s)).toEqual(['rxjs-lock', 'redlock']);
    for (const s of ['hot-key-cluster', 'semaphore-hot', 'read-mostly'] as const) {
      expect(librariesOf(s)).not.toContain('store-only');
      expect(librariesOf(s)).not.toContain('quorum-floor');
      expect(librariesOf(s)).not.toContain('script-floor');
      expect(librariesOf(s)).not.toContain('fenced-floor');
    }
  });

  it('keeps the one-server references on one server: store-only, script-floor and fenced-floor, no quorum-floor', () => {
    expect(librariesOf('uncontended')).toEqual(['rxjs-lock', 'redlock', 'redis-semaphore', 'baseline', 'store-only', 'script-floor', 'fenced-floor']);
    expect(librariesOf('many-keys')).toEqual(['rxjs-lock', 'redlock', 'redis-semaphore', 'baseline', 'store-only', 'script-floor', 'fenced-floor']);
    expect(librariesOf('uncontended', ['quorum-floor'])).toEqual([]);
    expect(librariesOf('uncontended-3-nodes', ['script-floor', 'fenced-floor', 'quorum-floor'])).toEqual(['quorum-floor']);
  });
});

/** A row of `library` in `scenario` that ran, with the figures the uncontended targets and tables read. */
function row(scenario: LockScenarioName, library: LibraryName, pairUs: number, serverCpuUs: number | null = null): ResultRow {
  const spec = SPECS.find((s) => s.name === scenario)!;
  const entry: BenchEntry = { library, variant: 'default', options: {} };
  return {
    ...emptyRow(spec, entry, 'failed', '', ROW_ENV),
    status: 'ok',
    note: null,
    pairP50Ms: pairUs / 1000,
    pairP99Ms: (2 * pairUs) / 1000,
    acquisitionsPerSec: 1e6 / pairUs,
    serverCpuUsPerAcquisition: serverCpuUs,
  };
}

/** The rows of the uncontended quorum scenario of `nodes` servers, with or without the references, and rxjs-lock on one server. */
function quorumRows(nodes: 3 | 5, references: boolean): ResultRow[] {
  const s = `uncontended-${nodes}-nodes` as const;
  return [
    row('uncontended', 'rxjs-lock', 40),
    row(s, 'rxjs-lock', 150, 90),
    row(s, 'redlock', 120, 66),
    ...(references ? [row(s, 'store-only', 144), row(s, 'quorum-floor', 132)] : []),
  ];
}

const vsRedlock = (rows: ResultRow[], scenario: string) => evaluateTargets(rows).find((t) => t.scenario === scenario && t.target.includes('redlock'))!;

describe("the quorum targets' references", () => {
  it('give each reference as a ratio to redlock on the MISS line, after the server CPU', () => {
    for (const nodes of [3, 5] as const) {
      const t = vsRedlock(quorumRows(nodes, true), `uncontended-${nodes}-nodes`);
      expect(t.status).toBe('MISS');
      expect(t.ratio).toBe(1.25);
      expect(t.measured).toBe('150.0 µs vs 120.0 µs: ×1.25; server CPU/acq 90.0 vs 66.0 µs; references: store-only ×1.20, quorum-floor ×1.10');
    }
  });

  it('leave out a reference that did not run or failed, and the list with none', () => {
    const rows = quorumRows(3, true);
    const failed = rows.map((r) => (r.library === 'quorum-floor' ? { ...r, status: 'failed' as const, note: 'boom' } : r));
    expect(vsRedlock(failed, 'uncontended-3-nodes').measured).toMatch(/; references: store-only ×1\.20$/);
    const none = vsRedlock(quorumRows(3, false), 'uncontended-3-nodes');
    expect(none.status).toBe('MISS');
    expect(none.measured).toBe('150.0 µs vs 120.0 µs: ×1.25; server CPU/acq 90.0 vs 66.0 µs');
  });

  it('are still given on a PASS', () => {
    const rows = quorumRows(5, true).map((r) => (r.scenario === 'uncontended-5-nodes' && r.library === 'rxjs-lock' ? { ...r, pairP50Ms: 0.108 } : r));
    const t = vsRedlock(rows, 'uncontended-5-nodes');
    expect(t.status).toBe('PASS');
    expect(t.measured).toContain('; references: store-only ×1.20, quorum-floor ×1.10');
  });

  it('give redlock and the references as ratios to rxjs-lock on one server on the "× one server" line', () => {
    const vsSingle = (rows: ResultRow[]) => evaluateTargets(rows).find((t) => t.scenario === 'uncontended-3-nodes' && t.target.includes('one server'))!;
    const t = vsSingle(quorumRows(3, true));
    expect(t.status).toBe('MISS');
    expect(t.ratio).toBe(3.75);
    expect(t.measured).toBe('150.0 µs vs 40.0 µs: ×3.75; redlock ×3.00; references: store-only ×3.60, quorum-floor ×3.30');
    // redlock or the references missing: left out, as on the redlock line
    const alone = quorumRows(3, false).filter((r) => r.library !== 'redlock');
    expect(vsSingle(alone).measured).toBe('150.0 µs vs 40.0 µs: ×3.75');
  });

  it('leave the one-server line on the baseline, with its own two references', () => {
    const rows = [
      row('uncontended', 'rxjs-lock', 50),
      row('uncontended', 'baseline', 40),
      row('uncontended', 'store-only', 48),
      row('uncontended', 'script-floor', 44),
      row('uncontended', 'fenced-floor', 46),
      ...quorumRows(3, true).slice(1),
    ];
    const t = evaluateTargets(rows).find((x) => x.scenario === 'uncontended')!;
    expect(t.measured).toBe('50.0 µs vs 40.0 µs: ×1.25; references: store-only ×1.20, script-floor ×1.10, fenced-floor ×1.15');
  });
});

describe('the page of a quorum run', () => {
  it('tabulates the references against redlock and describes them', () => {
    const page = renderReport(quorumRows(3, true));
    expect(page).toContain('| library | pair p50 µs | pair p99 µs | ÷ redlock p50 |');
    expect(page).toMatch(/\| \*\*store-only\*\* \| 144\.0 \| 288\.0 \| ×1\.20 \|/);
    expect(page).toMatch(/\| \*\*quorum-floor\*\* \| 132\.0 \| 264\.0 \| ×1\.10 \|/);
    expect(page).toContain('Two references run beside them');
    expect(page).toContain('- **quorum-floor** (a reference, not a peer; uncontended-3-nodes and uncontended-5-nodes only)');
    expect(page).toContain('references: store-only ×1.20, quorum-floor ×1.10');
  });

  it('still renders a run without them, and says nothing of them in the scenario text', () => {
    const page = renderReport(quorumRows(5, false));
    expect(page).toContain('### uncontended-5-nodes');
    expect(page).toMatch(/\| \*\*redlock\*\* \| 120\.0 \| 240\.0 \| ×1\.00 \|/);
    expect(page).not.toContain('Two references run beside them');
    expect(page).not.toMatch(/references: store-only ×/);
    expect(page).not.toContain('NaN');
  });

  it('keeps the one-server table on the baseline', () => {
    const page = renderReport([row('uncontended', 'rxjs-lock', 50), row('uncontended', 'baseline', 40)]);
    expect(page).toContain('| library | pair p50 µs | pair p99 µs | ÷ baseline p50 |');
    expect(page).not.toContain('Two references run beside them');
  });
});
