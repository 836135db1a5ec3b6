/**
 * The GC pauses of the bench's hot-key workers (bench/gcPauses.ts, bench/metrics.ts gcPauses,
 * bench/targets.ts): measured from Node's own `gc` entries after the warm-up cut, gathered over
 * the workers, and written beside the max-wait targets.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { watchGcPauses } from '../../bench/gcPauses.js';
import { entriesFor } from '../../bench/libraries.js';
import { emptyRow, gcPauses } from '../../bench/metrics.js';
import { renderReport } from '../../bench/report.js';
import type { ResultRow } from '../../bench/results.js';
import { scenarioSpecs } from '../../bench/scenarios.js';
import { evaluateTargets } from '../../bench/targets.js';
import { benchSettings, ROW_ENV } from './fixtures.js';

// A full collection on demand (as --expose-gc gives it), for this test's process only.
setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

describe('watchGcPauses', () => {
  it('counts the full collections that began after the cut, with the longest pause', async () => {
    const watch = watchGcPauses(0);
    fullGc();
    fullGc();
    await new Promise((resolve) => setTimeout(resolve, 20)); // (Node queues gc entries for a later task)
    const seen = watch.stop();
    expect(seen.majors).toBeGreaterThanOrEqual(2);
    expect(seen.maxMs).toBeGreaterThan(0);
  });

  it('leaves out what began before the cut', async () => {
    const watch = watchGcPauses(60_000);
    fullGc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(watch.stop()).toEqual({ maxMs: 0, majors: 0 });
  });
});

describe('the workers, gathered', () => {
  it('takes the longest pause and sums the full collections; nothing measured is null', () => {
    expect(
      gcPauses([
        { gcPauseMaxMs: 3.21, gcMajorPauses: 0 },
        { gcPauseMaxMs: 27.46, gcMajorPauses: 1 },
        { gcPauseMaxMs: 12, gcMajorPauses: 2 },
      ]),
    ).toEqual({ gcPauseMaxMs: 27.5, gcMajorPauses: 3 });
    expect(gcPauses([{ gcPauseMaxMs: null, gcMajorPauses: null }])).toEqual({ gcPauseMaxMs: null, gcMajorPauses: null });
  });
});

const SPECS = scenarioSpecs(benchSettings(['hot-key-0ms', 'hot-key-1ms'], true));

function hotRow(gc: { gcPauseMaxMs?: number | null; gcMajorPauses?: number | null }): ResultRow {
  const spec = SPECS.find((s) => s.name === 'hot-key-0ms')!;
  const entry = entriesFor('hot-key-0ms', undefined).find((e) => e.library === 'rxjs-lock')!;
  return {
    ...emptyRow(spec, entry, 'failed', '', ROW_ENV),
    status: 'ok',
    note: null,
    acquisitionsPerSec: 1000,
    waitMaxMs: 80,
    waitMaxAfterWarmupMs: 60,
    warmupCutSec: 1,
    jain: 1,
    ...gc,
  };
}

describe('the max-wait line and the hot-key table', () => {
  const line = (row: ResultRow) => evaluateTargets([row]).find((t) => t.scenario === 'hot-key-0ms' && t.target.startsWith('max wait'))!;

  it('gives the longest GC pause and the full collections beside the max wait', () => {
    const t = line(hotRow({ gcPauseMaxMs: 27.5, gcMajorPauses: 3 }));
    expect(t.status).toBe('MISS');
    expect(t.measured).toBe('60.0 ms after 1 s (limit 50); whole run 80.0 ms; longest GC pause of a worker after the cut 27.5 ms (3 full collections in all)');
    expect(line(hotRow({ gcPauseMaxMs: 4, gcMajorPauses: 1 })).measured).toContain('(1 full collection in all)');
  });

  it('says nothing of GC for a row that did not measure it (an older result)', () => {
    expect(line(hotRow({})).measured).toBe('60.0 ms after 1 s (limit 50); whole run 80.0 ms');
    expect(renderReport([hotRow({})])).not.toContain('longest GC pause');
    expect(renderReport([hotRow({ gcPauseMaxMs: 27.5, gcMajorPauses: 3 })])).toContain('longest GC pause ms after 1 s');
  });
});
