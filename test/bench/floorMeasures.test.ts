/**
 * The bench's floor row (bench/metrics.ts buildProbeRow, bench/targets.ts): its third part, the
 * pub/sub hop right after the sender had the client CPU for a turn, and how the hand-off target's
 * MISS names it; its fourth part, hot-key-1ms's turns with no lock (the hold ring), and how the
 * max-wait MISS names it. Pure functions on hand-made worker reports and result rows; the bench itself is
 * run by `npm run bench`, not here.
 */
import { describe, expect, it } from 'vitest';
import { buildProbeRow } from '../../bench/metrics.js';
import type { ProbeReport } from '../../bench/protocol.js';
import { floorAfterTurn, floorHoldRing, floorTurnGaps, type ResultRow } from '../../bench/results.js';
import { FLOOR_TURN_MS, floorMeasuredMs, probeSpecs, type FloorSpec } from '../../bench/scenarios.js';
import { renderReport } from '../../bench/report.js';
import { evaluateTargets } from '../../bench/targets.js';
import { CohortPolicy } from '../../src/engine/handoff/HandoffPolicy.js';
import { DEFAULTS } from '../../src/options/LockerOptions.js';
import { benchSettings, ROW_ENV } from './fixtures.js';

const ENV = ROW_ENV;
const SETTINGS = benchSettings(['floor'], false);
const floorSpec = probeSpecs(SETTINGS).find((s): s is FloorSpec => s.name === 'floor')!;

/** A result row of the run, with the figures a test needs (the others left out). */
const resultRow = (scenario: string, library: string, figures: Partial<ResultRow>): ResultRow =>
  ({ scenario, library, variant: 'default', label: library, status: 'ok', note: null, env: ENV, ...figures }) as ResultRow;

type FloorReport = Extract<ProbeReport, { kind: 'floor' }>;
const report = (figures: Partial<FloorReport>): FloorReport => ({ kind: 'floor', roles: ['turn'], pingMs: [], hopMs: [], turnHopMs: [], ...figures });

describe('floor: the hop after a turn', () => {
  it('runs a third part as long as hot-key-0ms, after the hop part, with the cohort turn of hot-key-0ms', () => {
    // (the default policy's turn once everyone of the batch had a pass, with the 7 other processes in line)
    expect(new CohortPolicy(DEFAULTS.cohort).turnMs(7)).toBe(FLOOR_TURN_MS);
    expect(floorSpec.turnMs).toBe(FLOOR_TURN_MS);
    expect(floorSpec.turnRingMs).toBe(SETTINGS.hotSeconds * 1000);
    expect(floorSpec.turnRingCutMs).toBe(1000);
    expect(floorMeasuredMs(floorSpec)).toBe(
      floorSpec.pingMs + floorSpec.gapMs + floorSpec.hopMs + floorSpec.gapMs + floorSpec.turnRingMs + floorSpec.gapMs + floorSpec.holdRingMs,
    );
  });

  it('reports the median and p99 of every worker’s hops after a turn, apart from the idle hops', () => {
    const row = buildProbeRow(
      floorSpec,
      [
        report({ roles: ['ping', 'hop', 'turn'], pingMs: [0.03, 0.04], hopMs: [0.05, 0.07], turnHopMs: [0.3, 0.5] }),
        report({ roles: ['hop', 'turn'], hopMs: [0.06], turnHopMs: [0.4] }),
        report({ turnHopMs: [0.35, 0.45, 2] }),
      ],
      undefined,
      ENV,
    );
    expect(row.hopP50Ms).toBe(0.06);
    expect(row.turnMs).toBe(FLOOR_TURN_MS);
    expect(row.turnHopP50Ms).toBe(0.4);
    expect(row.turnHops).toBe(6);
    expect(row.turnHopP99Ms).toBe(2);
    expect(floorAfterTurn([row])).toEqual({ ms: 0.4, turnMs: FLOOR_TURN_MS });
  });

  it('notes a ring that recorded nothing (a lost message, a failed worker) instead of leaving the figure out silently', () => {
    const row = buildProbeRow(floorSpec, [report({ roles: ['ping', 'hop', 'turn'], pingMs: [0.03], hopMs: [0.05] })], undefined, ENV);
    expect(row.turnHops).toBe(0);
    expect(row.note).toBe('no hop after a turn was recorded');
    expect(floorAfterTurn([row])).toBeUndefined();
  });

  it('has no hop after a turn for workers of an older bench (no such part): the row says so, not 0', () => {
    const older = { kind: 'floor', roles: ['hop'], pingMs: [0.03], hopMs: [0.05] } as unknown as FloorReport;
    const row = buildProbeRow(floorSpec, [older], undefined, ENV);
    expect(row.hopP50Ms).toBe(0.05);
    expect(row.turnHopP50Ms).toBeNull();
    expect(row.turnHops).toBe(0);
    expect(floorAfterTurn([row])).toBeUndefined();
  });
});

describe('the hand-off target names the hop after a turn', () => {
  const floorRow = (turnHopP50Ms: number | null): ResultRow =>
    resultRow('floor', 'no lock', {
      pingP50Ms: 0.03,
      hopP50Ms: 0.06,
      turnMs: FLOOR_TURN_MS,
      turnHopP50Ms,
      turnHops: 500,
    });
  const handoff = (handoffP50Ms: number): ResultRow =>
    resultRow('hot-key-0ms', 'rxjs-lock', {
      handoffP50Ms,
      jain: 1,
      // (what the page's hot-key table reads beside: not measured here)
      handoffs: null,
      sameLoopReacquirePct: null,
    });
  const judged = (rows: ResultRow[]) => evaluateTargets(rows).find((t) => t.scenario === 'hot-key-0ms' && t.target.startsWith('handoff'))!;

  it('still judges against the idle hop, and gives the ratio to the hop after a turn beside it', () => {
    const t = judged([floorRow(0.4), handoff(0.6)]);
    expect(t.status).toBe('MISS');
    expect(t.ratio).toBeCloseTo(10, 6);
    expect(t.measured).toContain('0.600 ms vs floor (pub/sub hop p50) 0.060 ms: ×10.00 (limit ×1.5)');
    expect(t.measured).toContain(`the hop after a ${FLOOR_TURN_MS} ms turn of work (floor row, same layout) 0.400 ms: ×1.50`);
  });

  it('says nothing of it when the run did not measure it', () => {
    const t = judged([floorRow(null), handoff(0.6)]);
    expect(t.measured).not.toContain('turn');
    expect(t.status).toBe('MISS');
  });

  it('the page describes, tabulates and sums up the hop after a turn only when the run measured it', () => {
    const measured = renderReport([floorRow(0.4), handoff(0.6)]);
    expect(measured).toContain('Last, a turn goes round all the workers');
    expect(measured).toContain('**hop after a turn**');
    expect(measured).toContain('; ×1.50 the hop after a turn.');
    const older = renderReport([{ ...floorRow(null), turnMs: undefined, turnHops: undefined } as ResultRow, handoff(0.6)]);
    expect(older).not.toContain('Last, a turn');
    expect(older).not.toContain('**hop after a turn**');
    expect(older).not.toMatch(/×[\d.]+ the hop after a turn/);
    expect(older).not.toContain('the hop right after a');
    // (a figure of 0 is no floor: no ratio to it anywhere)
    expect(renderReport([floorRow(0), handoff(0.6)])).not.toContain('Infinity');
  });

  it('passes on the idle hop alone', () => {
    expect(judged([floorRow(0.4), handoff(0.08)]).status).toBe('PASS');
  });
});

describe('floor: the hold ring (hot-key-1ms with no lock)', () => {
  it('runs as long as hot-key-1ms, with its loops, hold and warm-up cut', () => {
    const hot = benchSettings(['floor', 'hot-key-1ms'], false);
    const spec = probeSpecs(hot).find((s): s is FloorSpec => s.name === 'floor')!;
    expect(spec.holdRingMs).toBe(hot.hotSeconds * 1000);
    expect(spec.holdMs).toBe(1);
    expect(spec.loops).toBe(4);
    expect(spec.holdRingCutMs).toBe(1000);
  });

  it("reports every worker's waits together: p50, p99, max, and holds per second", () => {
    const row = buildProbeRow(
      floorSpec,
      [report({ holdWaitsMs: [40, 42, 90], holds: 400 }), report({ holdWaitsMs: [41], holds: 400 }), report({ holds: 200 })],
      undefined,
      ENV,
    );
    expect(row.holdRingWaits).toBe(4);
    expect(row.holdRingWaitP50Ms).toBe(41);
    expect(row.holdRingWaitMaxMs).toBe(90);
    expect(row.holdRingHoldsPerSec).toBe(Math.round((1000 / (floorSpec.holdRingMs / 1000)) * 10) / 10);
    expect(floorHoldRing([row])).toEqual({ maxMs: 90, p99Ms: row.holdRingWaitP99Ms, holdsPerSec: row.holdRingHoldsPerSec });
    // workers of an older bench: no figure, not 0
    const older = buildProbeRow(floorSpec, [report({})], undefined, ENV);
    expect(older.holdRingWaitMaxMs).toBeNull();
    expect(floorHoldRing([older])).toBeUndefined();
  });

  const hot = (waitMaxAfterWarmupMs: number): ResultRow =>
    resultRow('hot-key-1ms', 'rxjs-lock', {
      acquisitionsPerSec: 600,
      roundTripsPerAcquisition: 0.5,
      jain: 1,
      waitMaxAfterWarmupMs,
      waitMaxMs: waitMaxAfterWarmupMs,
      warmupCutSec: 1,
      timeouts: 0,
      overlaps: 0,
      // (what the page's hot-key table reads beside: not measured here)
      handoffP50Ms: null,
      handoffs: null,
      sameLoopReacquirePct: null,
    });
  const ring = (holdRingWaitMaxMs: number | null): ResultRow =>
    resultRow('floor', 'no lock', {
      pingP50Ms: 0.03,
      hopP50Ms: 0.06,
      durationSec: 14.3,
      holdRingSec: 10,
      holdRingWaitP50Ms: 42,
      holdRingWaitP99Ms: 66,
      holdRingWaitMaxMs,
      holdRingWaits: 6000,
      holdRingHoldsPerSec: 720,
    });
  const maxWait = (rows: ResultRow[]) => evaluateTargets(rows).find((t) => t.scenario === 'hot-key-1ms' && t.target.startsWith('max wait'))!;

  it("the max-wait line gives the ring's max and the ratio to it; still judged against the limit", () => {
    const t = maxWait([ring(90), hot(120)]);
    expect(t.status).toBe('MISS');
    expect(t.measured).toContain("floor (the same turns with no lock, floor row's hold ring): max 90.0 ms, p99 66.0 ms — ×1.33");
    expect(maxWait([ring(90), hot(95)]).status).toBe('PASS');
    expect(maxWait([ring(null), hot(120)]).measured).not.toContain('hold ring');
    expect(maxWait([hot(120)]).measured).not.toContain('hold ring');
  });

  it('the page describes and tabulates the ring only when the run measured it', () => {
    const page = renderReport([ring(90), hot(120)]);
    expect(page).toContain("hot-key-1ms's turns with no lock at all");
    expect(page).toContain("**wait in hot-key-1ms's turns, no lock** (hold ring, after 1 s): max 90.0 ms; 720 holds/s");
    const older = renderReport([{ ...ring(null), holdRingSec: undefined } as ResultRow, hot(120)]);
    expect(older).not.toContain('hold ring');
  });
});

describe("floor: the gaps between a worker's turns (hot-key-0ms with no lock)", () => {
  it("reports every worker's gaps together, and the hot-key-0ms max-wait line names them", () => {
    const row = buildProbeRow(floorSpec, [report({ turnGapsMs: [20, 22, 45] }), report({ turnGapsMs: [21] }), report({})], undefined, ENV);
    expect(row.turnGaps).toBe(4);
    expect(row.turnGapP50Ms).toBe(21);
    expect(row.turnGapMaxMs).toBe(45);
    expect(row.turnRingSec).toBe(floorSpec.turnRingMs / 1000);
    expect(floorTurnGaps([row])).toEqual({ maxMs: 45, p99Ms: row.turnGapP99Ms });
    expect(floorTurnGaps([buildProbeRow(floorSpec, [report({})], undefined, ENV)])).toBeUndefined();
    const hot0 = resultRow('hot-key-0ms', 'rxjs-lock', {
      acquisitionsPerSec: 50_000,
      jain: 1,
      waitMaxAfterWarmupMs: 90,
      waitMaxMs: 90,
      warmupCutSec: 1,
      handoffP50Ms: null,
      handoffs: null,
      sameLoopReacquirePct: null,
    });
    const line = evaluateTargets([row, hot0]).find((t) => t.scenario === 'hot-key-0ms' && t.target.startsWith('max wait'))!;
    expect(line.status).toBe('MISS');
    expect(line.measured).toContain("floor (turns of work with no lock, floor row's turn ring): max 45.0 ms");
    expect(line.measured).toContain('×2.00');
    const page = renderReport([row, hot0]);
    expect(page).toContain("**gap between a worker's turns**");
    expect(page).toContain('the floor of that scenario');
  });
});
