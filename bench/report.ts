/**
 * Writes docs/benchmarks.md and docs/benchmarks.svg from bench/results/latest.json alone.
 * `npm run bench` calls it after a full run; `npx tsx bench/report.ts [results.json]` regenerates
 * the page from a saved result file.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renderChart } from './chart.js';
import { REFERENCES } from './libraries.js';
import { floorAfterTurn, LATEST_PATH, physicalFloor, readRows, type ResultRow } from './results.js';
import { FLOOR_GAP_MS, READ_MOSTLY_WRITE_SHARE, SEMAPHORE_LIMIT, type ScenarioName } from './scenarios.js';
import {
  bestPeer,
  CLUSTER_BUS_PER_ACQUISITION,
  CLUSTER_VS_SINGLE,
  ENGINE_CPU_US,
  evaluateTargets,
  HANDOFF_FACTOR,
  QUORUM_VS_SINGLE,
  READ_WRITE_VS_MUTEX,
} from './targets.js';

export const DOC_PATH = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
export const CHART_PATH = fileURLToPath(new URL('../docs/benchmarks.svg', import.meta.url));

const dash = '–';
const num = (n: number | null | undefined, digits = 2): string => (n === null || n === undefined ? dash : n.toFixed(digits));
const int = (n: number | null | undefined): string => (n === null || n === undefined ? dash : Math.round(n).toLocaleString('en-US'));
const us = (ms: number | null | undefined): string => (ms === null || ms === undefined ? dash : (ms * 1000).toFixed(1));
const ratio = (a: number | null | undefined, b: number | null | undefined): string => (a === null || a === undefined || !b ? dash : `×${(a / b).toFixed(2)}`);

/** A Markdown table; the first column (or the first `leftColumns`) left-aligned, the figures right-aligned. */
function table(header: readonly string[], body: readonly (readonly string[])[], leftColumns = 1): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i < leftColumns ? '---' : '---:'))), ...body.map(line)].join('\n');
}

/** Notes can be long (a whole error message): tables get the start of them. */
const shortNote = (note: string | null, max = 110): string => {
  const clean = (note ?? '').replace(/\|/g, '\\|').replace(/\s+/g, ' ');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
};

/** A row's first cell; a run that did not produce numbers says why instead of the figures. */
function labelCell(r: ResultRow): string {
  return r.status === 'ok' ? `**${r.label}**` : `${r.label} (${r.status})`;
}

function notRun(r: ResultRow, columns: number): string[] {
  return [labelCell(r), ...Array.from({ length: columns - 1 }, (_, i) => (i === 0 ? shortNote(r.note) : ''))];
}

/** Lowest and highest per-pair CPU of one method over the engine-cpu rounds, µs. */
function roundRange(r: ResultRow, method: string): string {
  const values = (r.engineRounds ?? []).filter((x) => x.method === method && x.pairs > 0).map((x) => x.cpuUs / x.pairs);
  if (values.length === 0) return dash;
  return `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
}

/** The table layout of a scenario: the quorum scenarios are laid out as their one-server models. */
/** One column of a scenario table: its header, and its cell for a row that ran. */
type Column = readonly [header: string, cell: (r: ResultRow) => string];

/** A table of `rs`, one row each: the columns' cells, or what stopped a row that did not run. */
function columnsTable(rs: readonly ResultRow[], columns: readonly Column[]): string {
  return table(
    columns.map(([header]) => header),
    rs.map((r) => (r.status !== 'ok' ? notRun(r, columns.length) : columns.map(([, cell]) => cell(r)))),
  );
}

function layoutOf(scenario: string): string {
  if (/^uncontended-\d+-nodes$/.test(scenario)) return 'uncontended';
  if (/^hot-key-\d+-nodes$/.test(scenario)) return 'hot-key-1ms';
  return scenario;
}

/** Cluster-bus pub/sub messages per hand-off between processes (the hand-offs a wake-up message announces), or null. */
function busPerHandoff(r: ResultRow): number | null {
  if (r.busPublishMessages === null || r.busPublishMessages === undefined || r.busPublishShardMessages === null || !r.handoffs) return null;
  return (r.busPublishMessages + r.busPublishShardMessages) / r.handoffs;
}

/** The waits and their fairness, as the hot-key and semaphore tables show them. */
function waitColumns(rs: readonly ResultRow[]): Column[] {
  const cut = rs.find((r) => r.warmupCutSec !== null)?.warmupCutSec ?? 1;
  return [
    ['wait p50 ms', (r) => num(r.waitP50Ms, 2)],
    ['wait p99 ms', (r) => num(r.waitP99Ms, 1)],
    [`wait max ms after ${cut} s`, (r) => num(r.waitMaxAfterWarmupMs, 1)],
    ['wait max ms whole run', (r) => num(r.waitMaxMs, 1)],
    // (where measured: the hot-key runs of this bench, not older results nor the shared-lock scenarios)
    ...(rs.some((r) => r.gcPauseMaxMs != null) ? [[`longest GC pause ms after ${cut} s`, (r: ResultRow) => num(r.gcPauseMaxMs, 1)] as Column] : []),
    ['Jain', (r) => num(r.jain, 3)],
    ['min–max per loop', (r) => `${int(r.perLoopMin)}–${int(r.perLoopMax)}`],
    ['timeouts', (r) => int(r.timeouts)],
  ];
}

/** The hot-key table, with `extra` columns (header, cell) at the end. */
function hotKeyTable(rs: readonly ResultRow[], best: ResultRow | undefined, extra: readonly Column[]): string {
  return columnsTable(rs, [
    ['library', labelCell],
    ['acq/s', (r) => int(r.acquisitionsPerSec)],
    ['÷ best peer', (r) => ratio(r.acquisitionsPerSec, best?.acquisitionsPerSec)],
    ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
    ['server cmds/acq', (r) => num(r.serverCommandsPerAcquisition)],
    ...waitColumns(rs),
    ['overlaps', (r) => int(r.overlaps)],
    ['handoff p50 ms', (r) => num(r.handoffP50Ms, 3)],
    ['same loop re-acquires', (r) => (r.sameLoopReacquirePct === null ? dash : `${r.sameLoopReacquirePct.toFixed(1)}%`)],
    ...extra,
  ]);
}

function scenarioTable(scenario: string, rows: readonly ResultRow[]): string {
  const rs = rows.filter((r) => r.scenario === scenario);
  const base = rs.find((r) => r.library === 'baseline' && r.status === 'ok');
  const best = bestPeer(rows, scenario);
  switch (layoutOf(scenario)) {
    case 'uncontended': {
      // (on a quorum the target compares with redlock; no baseline runs there)
      const against = scenario === 'uncontended' ? 'baseline' : 'redlock';
      const reference = rs.find((r) => r.library === against && r.status === 'ok');
      return columnsTable(rs, [
        ['library', labelCell],
        ['pair p50 µs', (r) => us(r.pairP50Ms)],
        ['pair p99 µs', (r) => us(r.pairP99Ms)],
        [`÷ ${against} p50`, (r) => ratio(r.pairP50Ms, reference?.pairP50Ms)],
        ['acq/s', (r) => int(r.acquisitionsPerSec)],
        ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
        ['server cmds/acq', (r) => num(r.serverCommandsPerAcquisition)],
        ['server CPU µs/acq', (r) => num(r.serverCpuUsPerAcquisition)],
        ['wait p50 ms', (r) => num(r.waitP50Ms, 3)],
      ]);
    }
    case 'many-keys':
      return columnsTable(rs, [
        ['library', labelCell],
        ['acq/s', (r) => int(r.acquisitionsPerSec)],
        ['÷ baseline', (r) => ratio(r.acquisitionsPerSec, base?.acquisitionsPerSec)],
        ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
        ['server cmds/acq', (r) => num(r.serverCommandsPerAcquisition)],
        ['server CPU µs/acq', (r) => num(r.serverCpuUsPerAcquisition)],
        ['wait p50 ms', (r) => num(r.waitP50Ms, 3)],
        ['wait p99 ms', (r) => num(r.waitP99Ms, 3)],
        ['wait max ms', (r) => num(r.waitMaxMs, 1)],
        ['Jain', (r) => num(r.jain, 3)],
        ['overlaps', (r) => int(r.overlaps)],
      ]);
    case 'hot-key-1ms':
    case 'hot-key-0ms':
      return hotKeyTable(rs, best, []);
    case 'hot-key-cluster':
      return hotKeyTable(rs, best, [
        ['server CPU µs/acq', (r) => num(r.serverCpuUsPerAcquisition)],
        ['bus pub/sub msgs/acq', (r) => num(r.busPubsubMessagesPerAcquisition, 3)],
        ['bus pub/sub msgs/handoff', (r) => num(busPerHandoff(r), 2)],
      ]);
    case 'semaphore-hot': {
      const peer = rs.find((r) => r.library === 'redis-semaphore' && r.status === 'ok');
      return columnsTable(rs, [
        ['library', labelCell],
        ['acq/s', (r) => int(r.acquisitionsPerSec)],
        ['÷ redis-semaphore', (r) => ratio(r.acquisitionsPerSec, peer?.acquisitionsPerSec)],
        ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
        ['server cmds/acq', (r) => num(r.serverCommandsPerAcquisition)],
        ['server CPU µs/acq', (r) => num(r.serverCpuUsPerAcquisition)],
        ...waitColumns(rs),
        ['most holders at once (limit)', (r) => `${int(r.maxHolders)} (${int(r.permitLimit)})`],
      ]);
    }
    case 'read-mostly': {
      const mutex = rs.find((r) => r.library === 'rxjs-lock' && r.variant === 'mutex' && r.status === 'ok');
      return columnsTable(rs, [
        [
          'run',
          (r) =>
            r.variant === 'mutex'
              ? '**rxjs-lock mutex** (`acquire`, reads and writes alike)'
              : '**rxjs-lock read-write lock** (`acquireReadLock` / `acquireWriteLock`)',
        ],
        ['acq/s', (r) => int(r.acquisitionsPerSec)],
        ['÷ mutex', (r) => ratio(r.acquisitionsPerSec, mutex?.acquisitionsPerSec)],
        ['reads / writes', (r) => `${int(r.reads)} / ${int(r.writes)}`],
        ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
        ['server cmds/acq', (r) => num(r.serverCommandsPerAcquisition)],
        ['wait p50 ms', (r) => num(r.waitP50Ms, 2)],
        ['wait p99 ms', (r) => num(r.waitP99Ms, 1)],
        ['read wait p50 / p99 ms', (r) => `${num(r.readWaitP50Ms, 2)} / ${num(r.readWaitP99Ms, 1)}`],
        ['write wait p50 / p99 ms', (r) => `${num(r.writeWaitP50Ms, 2)} / ${num(r.writeWaitP99Ms, 1)}`],
        ['wait max ms', (r) => num(r.waitMaxMs, 1)],
        ['Jain', (r) => num(r.jain, 3)],
        ['timeouts', (r) => int(r.timeouts)],
        ['most readers at once', (r) => int(r.maxReaders)],
        ['most writers at once', (r) => int(r.maxWriters)],
        ['writer overlaps', (r) => `**${int(r.writerOverlaps)}**`],
      ]);
    }
    case 'engine-cpu': {
      const h = [
        "method (rxjs-lock on createLocker()'s in-memory store)",
        'CPU µs/pair (median of rounds)',
        'CPU µs/pair, lowest–highest round',
        'wall µs/pair (median)',
      ];
      const r = rs[0];
      if (!r) return '';
      if (r.status !== 'ok') return table(h, [notRun(r, h.length)]);
      return table(h, [
        ['**`await firstValueFrom(locker.acquire(k))` + `await lease.release()`**', num(r.cpuUsPerPair), roundRange(r, 'acquire'), num(r.wallUsPerPair)],
        ['`await lastValueFrom(of(1).pipe(locker.withLock(k)))`', num(r.withLockCpuUsPerPair), roundRange(r, 'withLock'), num(r.withLockWallUsPerPair)],
        ['the in-memory store alone (`tryAcquire` + `release`, awaited)', num(r.storeCpuUsPerPair, 3), roundRange(r, 'store'), '—'],
        ["**the engine's own cost: the pair above less the store alone**", num(r.engineOwnCpuUsPerPair), '—', '—'],
        ['in-process promise mutex (reference floor, not rxjs-lock)', num(r.mutexCpuUsPerPair, 3), roundRange(r, 'mutex'), num(r.mutexWallUsPerPair, 3)],
      ]);
    }
    case 'floor': {
      const h = ['what (no lock)', 'p50 ms', 'p99 ms', 'samples'];
      const r = rs[0];
      if (!r) return '';
      if (r.status !== 'ok') return table(h, [notRun(r, h.length)]);
      const rx = rows.find((x) => x.scenario === 'hot-key-0ms' && x.library === 'rxjs-lock' && x.variant === 'default' && x.status === 'ok');
      const floor = physicalFloor(rows);
      const body = [
        ['**PING round trip**: one worker process, sequential `await redis.ping()`', num(r.pingP50Ms, 3), num(r.pingP99Ms, 3), int(r.pings)],
        ['**pub/sub hop**: `PUBLISH` in one worker process → message callback in another', num(r.hopP50Ms, 3), num(r.hopP99Ms, 3), int(r.hops)],
      ];
      const afterTurn = floorAfterTurn(rows);
      if (afterTurn !== undefined)
        body.push([
          `**hop after a turn**: the same, right after the sender kept the client CPU busy for ${afterTurn.turnMs} ms (a turn passed round all ${r.processes} workers)`,
          num(afterTurn.ms, 3),
          num(r.turnHopP99Ms ?? null, 3),
          int(r.turnHops ?? null),
        ]);
      if (r.turnGapMaxMs != null)
        body.push([
          `**gap between a worker's turns** (turn ring, after 1 s: what a hot-key-0ms loop waits, no lock): max ${num(r.turnGapMaxMs, 1)} ms`,
          num(r.turnGapP50Ms ?? null, 1),
          num(r.turnGapP99Ms ?? null, 1),
          int(r.turnGaps ?? null),
        ]);
      if (r.holdRingWaitMaxMs != null)
        body.push([
          `**wait in hot-key-1ms's turns, no lock** (hold ring, after 1 s): max ${num(r.holdRingWaitMaxMs, 1)} ms; ${num(r.holdRingHoldsPerSec ?? null, 0)} holds/s`,
          num(r.holdRingWaitP50Ms ?? null, 1),
          num(r.holdRingWaitP99Ms ?? null, 1),
          int(r.holdRingWaits ?? null),
        ]);
      if (rx && floor && rx.handoffP50Ms !== null)
        body.push([
          `rxjs-lock hand-off in hot-key-0ms, for comparison (×${(rx.handoffP50Ms / floor.ms).toFixed(2)} the ${floor.what})`,
          num(rx.handoffP50Ms, 3),
          num(rx.handoffP99Ms, 3),
          int(rx.handoffs),
        ]);
      return table(h, body);
    }
    case 'seed-000':
      return columnsTable(rs, [
        ['case', labelCell],
        ['SET before', (r) => int(r.setBefore)],
        ['SET after', (r) => int(r.setAfter)],
        ['successes', (r) => int(r.successes)],
        ['failures', (r) => int(r.failures)],
        ['SET requests', (r) => int(r.setCommands)],
        ['round trips', (r) => int(r.roundTrips)],
        ['server commands', (r) => int(r.serverCommands)],
        ['round trips/acq', (r) => num(r.roundTripsPerAcquisition)],
        ['wait max ms', (r) => num(r.waitMaxMs, 1)],
        ['same loop re-acquires', (r) => (r.sameLoopReacquirePct === null ? dash : `${r.sameLoopReacquirePct.toFixed(1)}%`)],
        ['overlaps', (r) => int(r.overlaps)],
      ]);
    case 'cancel-storm':
      return columnsTable(rs, [
        ['library', labelCell],
        ['acquisitions started', (r) => int(r.stormAttempts)],
        ['held, then cancelled', (r) => int(r.successes)],
        ['cancelled while waiting', (r) => int(r.cancelledWhileWaiting)],
        ['timeouts', (r) => int(r.timeouts)],
        ['orphaned keys', (r) => `**${int(r.orphanedKeys)}**`],
        ['overlaps', (r) => int(r.overlaps)],
        ['round trips/held', (r) => num(r.roundTripsPerAcquisition)],
        ['server cmds/held', (r) => num(r.serverCommandsPerAcquisition)],
      ]);
    default:
      return table(
        ['library', 'acq/s'],
        rs.map((r) => [labelCell(r), int(r.acquisitionsPerSec)]),
      );
  }
}

/** The after-warm-up rule and its figures, for the hot-key texts. */
function afterWarmupText(rows: readonly ResultRow[]): string {
  const cut = measured(rows, (r) => r.warmupCutSec) ?? 1;
  const figures = rows
    .filter((r) => r.status === 'ok' && r.waitMaxMs !== null)
    .map((r) => `${r.label} ${num(r.waitMaxAfterWarmupMs, 1)} (${num(r.waitMaxMs, 1)})`);
  return `The max wait is given for the acquisitions that started at least ${cut} s after the run's start — the same cut for every library — and for the whole run beside it; max wait in ms after ${cut} s (whole run): ${figures.length > 0 ? figures.join(', ') : 'n/a'}.`;
}

/** The headline figures of the new rows, as a short list above the tables. */
function summaryLines(rows: readonly ResultRow[]): string[] {
  const lines: string[] = [];
  const engine = rows.find((r) => r.scenario === 'engine-cpu' && r.status === 'ok');
  if (engine)
    lines.push(
      `- **engine CPU** (in-memory store): ${num(engine.cpuUsPerPair)} µs per acquire + release pair, of which the store alone ${num(engine.storeCpuUsPerPair, 3)} µs: the engine's own ${num(engine.engineOwnCpuUsPerPair)} µs (wall ${num(engine.wallUsPerPair)} µs); through \`withLock\` ${num(engine.withLockCpuUsPerPair)} µs; an in-process promise mutex ${num(engine.mutexCpuUsPerPair, 3)} µs.`,
    );
  const floorRow = rows.find((r) => r.scenario === 'floor' && r.status === 'ok');
  const floor = physicalFloor(rows);
  const afterTurn = floorAfterTurn(rows);
  if (floorRow)
    lines.push(
      `- **floor** (hot-key layout, no lock): PING p50 ${num(floorRow.pingP50Ms, 3)} ms, pub/sub hop p50 ${num(floorRow.hopP50Ms, 3)} ms${afterTurn === undefined ? '' : `, the hop right after a ${afterTurn.turnMs} ms turn of work p50 ${num(afterTurn.ms, 3)} ms`}.`,
    );
  const rx0 = rows.find((r) => r.scenario === 'hot-key-0ms' && r.library === 'rxjs-lock' && r.variant === 'default' && r.status === 'ok');
  if (rx0 && floor && rx0.handoffP50Ms !== null)
    lines.push(
      `- **hand-off** (hot-key-0ms, rxjs-lock): p50 ${num(rx0.handoffP50Ms, 3)} ms = ×${(rx0.handoffP50Ms / floor.ms).toFixed(2)} the ${floor.what} (target ≤ ×${HANDOFF_FACTOR})${afterTurn === undefined ? '' : `; ×${(rx0.handoffP50Ms / afterTurn.ms).toFixed(2)} the hop after a turn`}.`,
    );
  for (const scenario of ['hot-key-1ms', 'hot-key-0ms']) {
    const rs = rows.filter((r) => r.scenario === scenario && r.status === 'ok');
    if (rs.length === 0) continue;
    const cut = rs.find((r) => r.warmupCutSec !== null)?.warmupCutSec ?? 1;
    lines.push(
      `- **max wait, ${scenario}**, after ${cut} s (whole run), ms: ${rs.map((r) => `${r.label} ${num(r.waitMaxAfterWarmupMs, 1)} (${num(r.waitMaxMs, 1)})`).join(' · ')}.`,
    );
  }
  const ok = (scenario: string, variant = 'default') =>
    rows.find((r) => r.scenario === scenario && r.library === 'rxjs-lock' && r.variant === variant && r.status === 'ok');
  const semaphore = ok('semaphore-hot');
  const semaphorePeer = rows.find((r) => r.scenario === 'semaphore-hot' && r.library === 'redis-semaphore' && r.status === 'ok');
  if (semaphore) {
    const versus = semaphorePeer
      ? ` vs redis-semaphore ${int(semaphorePeer.acquisitionsPerSec)} (×${num(semaphore.acquisitionsPerSec! / semaphorePeer.acquisitionsPerSec!)}), Jain ${num(semaphore.jain, 3)} vs ${num(semaphorePeer.jain, 3)}, round trips/acq ${num(semaphore.roundTripsPerAcquisition)} vs ${num(semaphorePeer.roundTripsPerAcquisition)}`
      : '';
    lines.push(
      `- **semaphore** (semaphore-hot, limit ${int(semaphore.permitLimit)}): rxjs-lock ${int(semaphore.acquisitionsPerSec)} acq/s${versus}; most holders at once ${int(semaphore.maxHolders)}.`,
    );
  }
  const readWrite = ok('read-mostly');
  const mutex = ok('read-mostly', 'mutex');
  if (readWrite) {
    const versus = mutex
      ? ` vs ${int(mutex.acquisitionsPerSec)} with its mutex: ×${num(readWrite.acquisitionsPerSec! / mutex.acquisitionsPerSec!)} (target ≥ ×${READ_WRITE_VS_MUTEX})`
      : '';
    lines.push(
      `- **read-write lock** (read-mostly): ${int(readWrite.acquisitionsPerSec)} acq/s${versus}; up to ${int(readWrite.maxReaders)} readers at once, writer overlaps ${int(readWrite.writerOverlaps)}.`,
    );
  }
  const onCluster = ok('hot-key-cluster');
  if (onCluster) {
    const single = ok('hot-key-1ms');
    const broadcast = ok('hot-key-cluster', 'broadcast');
    const share = single?.acquisitionsPerSec && onCluster.acquisitionsPerSec !== null ? onCluster.acquisitionsPerSec / single.acquisitionsPerSec : null;
    const versus = single ? ` = ×${num(share, 3)} its ${int(single.acquisitionsPerSec)} on one server (target ≥ ×${CLUSTER_VS_SINGLE})` : '';
    const bus = `cluster-bus pub/sub messages per acquisition ${num(onCluster.busPubsubMessagesPerAcquisition, 3)} with sharded wake-ups${broadcast ? `, ${num(broadcast.busPubsubMessagesPerAcquisition, 3)} with broadcast ones` : ''}`;
    lines.push(`- **Redis Cluster** (hot-key-cluster, rxjs-lock): ${int(onCluster.acquisitionsPerSec)} acq/s${versus}; ${bus}.`);
  }
  return lines;
}

/** A figure of this run, for the scenario texts. */
function measured(rows: readonly ResultRow[], pick: (r: ResultRow) => number | null): number | null {
  for (const r of rows) {
    const value = r.status === 'ok' ? pick(r) : null;
    if (value !== null) return value;
  }
  return null;
}

function scenarioText(scenario: string, all: readonly ResultRow[]): string {
  const rows = all.filter((r) => r.scenario === scenario);
  const seconds = (fallback: number) => `${(measured(rows, (r) => r.durationSec) ?? fallback).toFixed(0)} s`;
  switch (scenario) {
    case 'uncontended':
      return `One process, one loop: acquire and release one key, one after the other, for ${seconds(3)} (\`BENCH_SHORT_SECONDS\`) after a 1 s warm-up. The pair time runs from the call to acquire until release has resolved: the cost of a lock + unlock when nobody else wants it. Redis runs on the client's CPU here (see the machine note).`;
    case 'many-keys':
      return `One process, 64 concurrent loops, each on its own key, all through one connection, for ${seconds(3)}; no hold. The per-acquisition cost when nothing contends, and how well a library keeps one socket busy. rxjs-lock's store sends the calls of one tick after the first in one write (\`coalesceWrites\`, its default: the socket corked to the end of the tick), and so does store-only; the baseline and the floors write each command as ioredis does by default, one system call each.`;
    case 'hot-key-1ms':
      return `8 processes × 4 loops take turns on one key for ${seconds(10)} (\`BENCH_SECONDS\`); each holder keeps the lock 1 ms (\`setTimeout(1)\`, which fires after 1 ms or a little more), then releases and goes again at once. The hold and the two round trips around it cap every library at a few hundred acquisitions per second here, so the differences are in fairness, tail wait and commands per acquisition. ${afterWarmupText(rows)}`;
    case 'hot-key-0ms':
      return `As hot-key-1ms with no hold: the critical section only yields once to the event loop (\`await new Promise(setImmediate)\`, so replies already read are processed while the lock is held). How fast a lock can change hands. ${afterWarmupText(rows)}`;
    case 'engine-cpu': {
      const pairs = measured(rows, (r) => r.enginePairs);
      return `rxjs-lock's own cost, without Redis: \`createLocker()\` with its default in-memory store (\`MemoryLockStore\`) and every default setting, sequential acquire + release of one key in one worker process (pinned to the client CPU like every run), after a warm-up. CPU is the \`process.cpuUsage()\` delta (user + system, every thread of the process, garbage collection included) divided by the pairs; wall is hrtime. Each round runs every method for the same time, in turn; the table gives the median round (${pairs === null ? 'n/a' : pairs.toLocaleString('en-US')} acquire + release pairs measured in all; \`BENCH_ENGINE_SECONDS\`). The in-process mutex is ten lines (what \`async-mutex\` does): the floor of any lock whose acquire is a promise. Target: ≤ ${ENGINE_CPU_US} µs of CPU per acquire + release pair.`;
    }
    case 'floor': {
      // floor: its whole duration covers two parts, or three (the hop after a turn), of the same
      // length, with gaps between; in results that have them, the turn ring and the hold ring have
      // lengths of their own
      const floorRun = rows.find((r) => r.status === 'ok');
      const gapSec = FLOOR_GAP_MS / 1000;
      const holdRingSec = floorRun?.holdRingSec ?? null;
      const turnRingSec = floorRun?.turnRingSec ?? null;
      const floorParts = floorRun?.turnHops == null || turnRingSec !== null ? 2 : 3;
      const partsSec =
        floorRun?.durationSec == null
          ? null
          : floorRun.durationSec - (holdRingSec === null ? 0 : holdRingSec + gapSec) - (turnRingSec === null ? 0 : turnRingSec + gapSec);
      const floorPart = partsSec === null ? '2 s' : `${((partsSec - (floorParts - 1) * gapSec) / floorParts).toFixed(1)} s`;
      const holdRingText =
        holdRingSec === null
          ? ''
          : ` Then, for ${holdRingSec} s (as long as hot-key-1ms runs), hot-key-1ms's turns with no lock at all: a turn goes round the 8 workers over pub/sub, and in its turn each gives each of its 4 loops one 1 ms hold (a timer, as the scenario's), one after another, then publishes to the next. Each loop records its wait from the end of one hold to the start of its next, for the waits that begin after the first second (the scenarios' cut): the waits of a perfectly fair lock that serves all of a process's waiters in one turn, costing nothing but the hops. Its max wait is the floor the hot-key-1ms max-wait target is up against on this machine.`;
      const floorTurnText =
        floorRun?.turnHops == null
          ? ''
          : ` Last, a turn goes round all the workers${turnRingSec === null ? '' : ` for ${turnRingSec} s (as long as hot-key-0ms runs)`}: on its message each keeps the client CPU busy for ${floorRun.turnMs} ms — the cohort policy's turn in hot-key-0ms, where 7 other processes wait — and then publishes to the next; the hop to the next is recorded the same way. Still no lock: this is what the machine charges for waking a process right after another one had the client CPU for a turn, which is what every hand-off of hot-key-0ms is. The target stays judged against the idle hop; the hop after a turn is the measured floor a MISS is up against.${floorRun.turnGapMaxMs == null ? '' : " Each worker also records the time from the end of its turn to the start of its next, after the first second: what a hot-key-0ms loop waits with no lock, the floor of that scenario's max-wait target."}`;
      const floor = physicalFloor(all);
      return `What Redis and the machine cost before any lock logic, measured in the same run and the same layout as the hot-key scenarios: 8 worker processes pinned to the client CPU, Redis on its own CPU. First ${floorPart} (\`BENCH_FLOOR_SECONDS\`, each part) of sequential PINGs from one worker; then two workers pass a timestamp back and forth over pub/sub: each receiver records the time from right before the other's \`PUBLISH\` call to the start of its own message callback (\`process.hrtime.bigint()\`, one clock for every process) and at once publishes its own — a key handed from process to process, each receiver sleeping on its socket until the message comes. The other 6 workers stay connected and subscribed to a channel of their own, but idle: what the waiting processes of a push-based lock do during a hand-off. (Busy-looping them would add CPU run-queue time that depends on the scheduler, not on the path of a hand-off, and would raise the floor.) The hand-off target of hot-key-0ms is ≤ ${HANDOFF_FACTOR} × ${floor ? `this run's ${floor.what} (${floor.ms.toFixed(3)} ms)` : 'the pub/sub hop p50 (the PING p50 when the hop is missing)'}.${floorTurnText}${holdRingText}`;
    }
    case 'seed-000': {
      const tries = measured(rows, (r) => (r.successes === null || r.failures === null ? null : r.successes + r.failures));
      const perLoop = tries === null ? 400 : Math.round(tries / 12);
      return `3 processes × 4 concurrent loops × ${perLoop} tries each (\`BENCH_SEED_TRIES\`) on the key \`lock_key\`; each try waits at most 1,000 ms, then holds 1 ms (timer) and releases. Counts the SET commands Redis executed (\`cmdstat_set\` in \`INFO commandstats\`, which also counts SETs run inside Lua scripts; reset before each run, so "SET before" is 0) and the tries that got the lock or gave up. A library whose acquire script checks the key before it SETs executes a SET only when it wins, so its SET count equals its successes whatever it costs: the round trips and server commands beside it show the rest. rxjs-lock runs with its defaults and with \`{ localGate: false }\`; a variant whose option this version of \`createLocker\` rejects (\`LockOptionsError\`) is skipped.`;
    }
    case 'cancel-storm': {
      const started = measured(rows, (r) => r.stormAttempts) ?? 4000;
      return `One process starts ${started.toLocaleString('en-US')} acquisitions (\`BENCH_STORM_ACQUISITIONS\`) of 4 hot keys, 16 at a time, and cancels each after a random 0–5 ms, whether it is still waiting or already holding. Then it waits for the libraries' background work to end (and 0.5 s more) and counts the lock keys still in Redis: an orphaned key stays locked until its 10 s TTL, so every later acquisition of it waits in vain. rxjs-lock: \`work$.pipe(locker.withLock(key))\`, unsubscribed. redis-semaphore: \`acquire(abortSignal)\`, release in \`finally\`. redlock and the baseline cannot be cancelled: the acquire is raced against the timer and abandoned when the timer wins (released in \`finally\` when it won) — the naive pattern, which leaks whenever the abandoned acquire succeeds later; their abandoned retries also explain their round trips per held lock.`;
    }
    case 'uncontended-3-nodes':
    case 'uncontended-5-nodes':
    case 'hot-key-3-nodes':
    case 'hot-key-5-nodes': {
      const nodes = /(\d+)-nodes/.exec(scenario)?.[1] ?? '?';
      const model = scenario.startsWith('uncontended')
        ? `uncontended (one loop, acquire + release, ${seconds(3)})`
        : `hot-key-1ms (8 processes × 4 loops on one key, 1 ms hold, ${seconds(10)})`;
      // (described when this run has them: an older result, or a BENCH_LIBRARIES subset, may not)
      const withReferences = rows.some((r) => REFERENCES.some((ref) => ref.library === r.library && ref.scenarios.includes(scenario as ScenarioName)));
      const references = withReferences
        ? " Two references run beside them (not peers, see How each library is used): **store-only**, the same `RedlockStore` called directly with no engine, and **quorum-floor**, the least a fenced quorum lock pays: one script per node per acquire that sets the key and writes its fence record, one compare-and-delete per node per release. Between rxjs-lock and store-only lies the engine's cost; between store-only and quorum-floor, the quorum store's client machinery and its scripts' extra work (hints, fence blocks); between quorum-floor and redlock, what fencing costs (redlock has no fences). The target's line gives both references' pair p50 as a ratio to redlock's."
        : '';
      return `As ${model}, on a quorum of ${nodes} independent Redis servers (the bench's own and ${Number(nodes) - 1} more started beside it, pinned alike): rxjs-lock's \`RedlockStore\` with its defaults against redlock with its defaults over the same servers. Round trips count one per server called; server commands and server CPU are summed over the servers. Target: rxjs-lock's uncontended pair p50 ≤ ${QUORUM_VS_SINGLE} × its own on one server in the same run, and below redlock's; on the hot key at least redlock's throughput, with no timeout and no overlap.${references}`;
    }
    case 'semaphore-hot':
      return `As hot-key-1ms (8 processes × 4 loops on one key, 1 ms hold, ${seconds(10)}), on a counting semaphore of ${SEMAPHORE_LIMIT} permits: every acquisition takes 1, so up to ${SEMAPHORE_LIMIT} holders hold at once and 28 loops wait. rxjs-lock: \`locker.acquirePermit(key, { limit: ${SEMAPHORE_LIMIT}, waitTimeout, ttl })\`, then \`lease.release()\` (waiters queue in one line per key, first come first served, woken by pub/sub; a holder that releases while a loop of its own process waits passes its permit to it in-process, within the locker's default cohort bounds). redis-semaphore: \`new Semaphore(redis, key, ${SEMAPHORE_LIMIT}, { acquireTimeout, lockTimeout })\` with its defaults (a sorted set of holders; a refused acquire retries every 10 ms). **most holders at once** counts the critical sections open together, from the timestamps every process recorded right after its acquire resolved and right before it called release (a sweep over them on the machine-wide monotonic clock, no extra Redis traffic); those sections lie inside the real holds, so a correct semaphore never shows more than ${SEMAPHORE_LIMIT}, and a run that shows more is **failed**: its row gives the failure instead of figures. Targets: rxjs-lock's throughput and Jain index at least redis-semaphore's, its round trips per acquisition at most redis-semaphore's. ${afterWarmupText(rows)}`;
    case 'read-mostly':
      return `8 processes × 4 loops on one key for ${seconds(10)}, 1 ms hold (timer); each acquisition is a write with probability ${READ_MOSTLY_WRITE_SHARE}, else a read, drawn by a generator per loop seeded from the worker and the loop, so both runs draw the same sequence in each loop. Run twice on the same workload: with rxjs-lock's read-write lock (\`acquireReadLock\` for a read, \`acquireWriteLock\` for a write: readers share, a writer holds alone, and once a writer waits, later readers queue behind it) and with its plain mutex (\`acquire\` for both): the gain of sharing the reads. **most readers / writers at once** and **writer overlaps** (pairs of sections open together of which one writes) come from the recorded sections as in semaphore-hot; a writer beside anyone fails the run. Target: the read-write lock's throughput ≥ ${READ_WRITE_VS_MUTEX} × the mutex's. rxjs-lock is alone here: neither redlock nor redis-semaphore has a read-write lock.`;
    case 'hot-key-cluster': {
      return `As hot-key-1ms (8 processes × 4 loops on one key, 1 ms hold, ${seconds(10)}), on a private Redis Cluster of 3 masters and no replicas that the bench starts for this scenario (\`support/embeddedRedisCluster.ts\`, the masters pinned to the Redis CPU) and stops after it. Every library gets one ioredis \`Cluster\` client per process where it takes a \`Redis\`, and runs on it unchanged: redlock with the Cluster as its only client, redis-semaphore and the baseline through the Cluster's commands. The key lives on one master, so this measures what the Cluster client and the wake-ups cost, not any spreading of load. rxjs-lock runs twice: with its defaults (\`new RedisLockStore(cluster)\`: wake-ups over sharded pub/sub, \`SPUBLISH\` to a channel in the key's slot, which its master delivers itself and relays to its own replicas only), and as **broadcast**, with the store's \`subscriber\` option given \`cluster.duplicate()\`, which keeps wake-ups on the store's inbox channel (\`PUBLISH\`, which the cluster bus relays to every other node). As on one server, the default store opens its subscriber connections (here a Cluster duplicate with sharded subscribers, one per master) on its first wait, inside the measured window; the broadcast variant's subscriber client is connected before it. Round trips count the Cluster's node, subscriber and slot-refresher connections; server commands and server CPU are summed over the masters (the CPU includes the idle masters' own upkeep: their timers and the cluster bus's heartbeats); **bus pub/sub msgs/acq** is the growth of \`cluster_stats_messages_publish_sent\` + \`cluster_stats_messages_publishshard_sent\` (\`CLUSTER INFO\`) summed over the masters, divided by acquisitions. Targets: rxjs-lock's throughput ≥ ${CLUSTER_VS_SINGLE} × its own in hot-key-1ms of the same run; ≤ ${CLUSTER_BUS_PER_ACQUISITION} bus messages per acquisition, and fewer than the broadcast variant. ${afterWarmupText(rows)}`;
    }
    default:
      return '';
  }
}

/** How busy the rest of the machine was during a scenario's runs. */
function noiseLine(rows: readonly ResultRow[]): string | null {
  const measuredRows = rows.filter((r) => r.otherCpuPct !== null);
  if (measuredRows.length === 0) return null;
  const range = (values: number[]) => {
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    return lo === hi ? `${lo.toFixed(1)}%` : `${lo.toFixed(1)}–${hi.toFixed(1)}%`;
  };
  const other = measuredRows.map((r) => r.otherCpuPct!);
  const steal = measuredRows.map((r) => r.stealPct ?? 0);
  const noisy = measuredRows.filter((r) => r.otherCpuPct! >= 10).map((r) => `${r.label} (${r.otherCpuPct}%)`);
  const text = `Other processes on the machine used ${range(other)} of its CPU time during these runs; hypervisor steal ${range(steal)}.`;
  return noisy.length > 0 ? `**Disturbed:** ${text} Runs disturbed by 10% or more: ${noisy.join(', ')}.` : `_${text}_`;
}

/** How the run was pinned, from the rows (each row records its own placement). */
function pinningText(rows: readonly ResultRow[]): string {
  const split = rows.find((r) => r.env.pinned !== null && !/^redis@(\d+) clients@\1$/.test(r.env.pinned));
  const shared = rows.find((r) => r.env.pinned !== null && /^redis@(\d+) clients@\1$/.test(r.env.pinned));
  if (!split && !shared) return 'not pinned (no taskset)';
  const parts: string[] = [];
  if (split) parts.push(`pinned with taskset: ${split.env.pinned!.replace('redis@', 'Redis on CPU ').replace(' clients@', ', every client process on CPU ')}`);
  if (shared)
    parts.push(
      `Redis moved to CPU ${/clients@(\d+)/.exec(shared.env.pinned!)?.[1]} for ${[...new Set(rows.filter((r) => r.env.pinned === shared.env.pinned).map((r) => r.scenario))].join(', ')}`,
    );
  return parts.join('; ');
}

export function renderReport(rows: readonly ResultRow[]): string {
  const env = rows[0]?.env;
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  const targets = evaluateTargets(rows);
  const passed = targets.filter((t) => t.status === 'PASS').length;
  const problems = rows.filter((r) => r.status !== 'ok' || (r.errors ?? 0) > 0);

  const out: string[] = [];
  out.push('# Benchmarks');
  out.push('');
  out.push('<!-- Generated by bench/report.ts from bench/results/latest.json: edit the generator, not this file. -->');
  out.push('');
  out.push(
    'rxjs-lock against the libraries people would otherwise pick, measured **in the same run on the same private Redis**: [redlock](https://www.npmjs.com/package/redlock) 5.0.0-beta.2, [redis-semaphore](https://www.npmjs.com/package/redis-semaphore) 5.x (`Mutex`; `Semaphore` in semaphore-hot), and a hand-written `SET NX PX` loop (the baseline). All use ioredis 6.',
  );
  out.push('');
  if (env) {
    out.push(
      `Run of ${env.runAt.replace('T', ' ').slice(0, 16)} UTC: Redis ${env.redisVersion}, node ${env.node}, ${env.cores} × ${env.cpu}; ${pinningText(rows)}. rxjs-lock source: ${env.rxjsLockSource ?? 'unknown'}.${env.quick ? ' **QUICK smoke run: the durations were cut, the numbers are not comparable.**' : ''}`,
    );
    out.push('');
  }
  out.push('![acquisitions per second and longest wait per scenario and library](benchmarks.svg)');
  out.push('');
  out.push('## How to run');
  out.push('');
  out.push('```sh');
  out.push('npm install');
  out.push('npm run bench                  # every scenario × library, about 6 minutes; rewrites bench/results/ and this page');
  out.push('BENCH_QUICK=1 npm run bench    # smoke run, under a minute (numbers not comparable; this page is left alone)');
  out.push('npx tsx bench/report.ts        # regenerate this page and the chart from bench/results/latest.json');
  out.push('```');
  out.push('');
  out.push(
    'The bench starts its own `redis-server` (the system binary, through `support/embeddedRedis.ts`) on a free port — never a server already running on 6379 — and stops it, with every worker process, when it ends, fails or is interrupted. The quorum scenarios get more servers beside it; hot-key-cluster gets a private Redis Cluster of 3 masters (`support/embeddedRedisCluster.ts`), started right before that scenario and stopped right after it.',
  );
  out.push('');
  out.push(
    table(
      ['variable', 'default', 'meaning'],
      [
        ['`BENCH_QUICK`', 'unset', '`1`: every duration and count cut down (smoke test)'],
        [
          '`BENCH_SECONDS`',
          '10',
          'contention time of the hot-key scenarios (hot-key-1ms, hot-key-0ms, on 3 and 5 nodes, on the cluster) and of semaphore-hot and read-mostly',
        ],
        ['`BENCH_SHORT_SECONDS`', '3', 'measured time of uncontended and many-keys'],
        ['`BENCH_SEED_TRIES`', '400', 'tries per loop in seed-000'],
        ['`BENCH_STORM_ACQUISITIONS`', '4000', 'acquisitions started in cancel-storm'],
        ['`BENCH_FLOOR_SECONDS`', '2', 'measured time of each part of floor (PING, pub/sub hop, hop after a turn)'],
        ['`BENCH_ENGINE_SECONDS`', '1.5', 'measured time of each method in engine-cpu (after a 1 s warm-up)'],
        ['`BENCH_SCENARIOS`', 'all', 'comma-separated subset, e.g. `floor,hot-key-0ms` (the hand-off target needs both)'],
        [
          '`BENCH_LIBRARIES`',
          'all',
          'comma-separated subset of `rxjs-lock,redlock,redis-semaphore,baseline,store-only,script-floor,fenced-floor,quorum-floor` (engine-cpu runs only with rxjs-lock; the last four are references: store-only runs in uncontended, many-keys, uncontended-3-nodes and uncontended-5-nodes, script-floor and fenced-floor in uncontended and many-keys, quorum-floor in uncontended-3-nodes and uncontended-5-nodes)',
        ],
        ['`BENCH_NO_PIN`', 'unset', '`1`: do not pin with taskset'],
      ],
      3,
    ),
  );
  out.push('');
  out.push(
    'To add an rxjs-lock variant (an option set to compare), add it to `RXJS_LOCK_VARIANTS` in `bench/libraries.ts`; its options are spread into `createLocker` in `bench/adapters/rxjsLock.ts`, the one file that builds the store and the locker.',
  );
  out.push('');
  out.push('## Read this first: the machine');
  out.push('');
  out.push(
    'The reference machine has **2 noisy vCPUs**. Absolute numbers move by 20–30% between runs; **compare ratios within one run**, never numbers across runs. Durations are short (10 s per hot-key run) to keep the whole bench at about six minutes.',
  );
  out.push('');
  out.push(
    "Where `taskset` is available, every client process runs on the first CPU and Redis on the second, so the two sides do not take turns on one core (in the hot-key scenarios 8 client processes share the client CPU). One exception: on this machine a message from one vCPU to a process sleeping on the other costs a wake-up of about 80 µs, so a lone client doing one request at a time pays it twice per round trip (an uncontended lock + unlock takes ≈ 200 µs split across the CPUs, ≈ 30 µs on one). That would swamp the libraries' own cost, so **uncontended runs with Redis on the client's CPU**. In the other scenarios both CPUs are busy and the split layout applies; their handoff times include that cross-CPU hop, which the **floor** row measures in the same run and layout (a PING round trip, a pub/sub hop from one worker process to another, and the same hop right after the sender had the client CPU for a turn).",
  );
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push(
    `rxjs-lock with its default settings, judged against the peers of the same run: **${passed} of ${targets.length} met**. A MISS does not fail \`npm run bench\`.`,
  );
  out.push('');
  out.push(
    table(
      ['scenario', 'target', 'result', 'measured (rxjs-lock vs reference)', 'ratio'],
      targets.map((t) => [t.scenario, t.target, t.status === 'PASS' ? 'PASS' : '**MISS**', t.measured, t.ratio === null ? dash : t.ratio.toFixed(2)]),
    ),
  );
  out.push('');
  out.push('## Results');
  out.push('');
  const summary = summaryLines(rows);
  if (summary.length > 0) {
    out.push('In this run:');
    out.push('');
    out.push(...summary);
    out.push('');
  }
  for (const scenario of scenarios) {
    out.push(`### ${scenario}`);
    out.push('');
    const text = scenarioText(scenario, rows);
    if (text) {
      out.push(text);
      out.push('');
    }
    out.push(scenarioTable(scenario, rows));
    out.push('');
    const quiet = noiseLine(rows.filter((r) => r.scenario === scenario));
    if (quiet) {
      out.push(quiet);
      out.push('');
    }
  }
  if (problems.length > 0) {
    out.push('### Skipped, failed or erroring runs');
    out.push('');
    for (const r of problems) out.push(`- ${r.scenario} · ${r.label}: ${r.status}${r.note ? ` — ${r.note}` : ''}`);
    out.push('');
  }
  out.push('## How each library is used');
  out.push('');
  out.push(
    '- **rxjs-lock** (this repository, built into `dist/` by `scripts/build.mjs` at the start of `npm run bench`, so it runs as compiled JavaScript like the peers; the version is in the header above): `createLocker({ store: new RedisLockStore(redis), ...variantOptions })`; `firstValueFrom(locker.acquire(key, { waitTimeout, ttl }))` then `lease.release()`; in cancel-storm `work$.pipe(locker.withLock(key))`, unsubscribed; in semaphore-hot `locker.acquirePermit(key, { limit: 4, waitTimeout, ttl })`, in read-mostly `locker.acquireReadLock(key, …)` / `locker.acquireWriteLock(key, …)` (and `locker.acquire` in its **mutex** run). Keys `lock:<name>` (a semaphore or read-write lock keeps helper keys `rxjs-lock:shared-*:{lock:<name>}`).',
  );
  out.push(
    '- **redlock 5.0.0-beta.2**: `new Redlock([redis])` with its default settings (retry every 200 ± 100 ms). It has no wait limit in milliseconds, so each call passes `retryCount = round(waitTimeout / 200)` (50 for a 10 s wait, 5 for 1 s); nothing else is changed. `acquire([key], ttl)` then `lock.release()`; a failed acquire (`ExecutionError`) counts as a timeout.',
  );
  out.push(
    '- **redis-semaphore 5.x**: `new Mutex(redis, key, { acquireTimeout: waitTimeout, lockTimeout: ttl })` (both 10 s, its defaults, except in seed-000 and cancel-storm where the wait is 1 s); retry every 10 ms; `acquire()` then `release()`. Keys `mutex:<name>`. In semaphore-hot `new Semaphore(redis, key, 4, { acquireTimeout, lockTimeout })` alike (key `semaphore:<name>`, a sorted set of holders). It has no read-write lock, so it does not run read-mostly; neither does redlock, nor the baseline.',
  );
  out.push(
    '- **baseline**: `SET key token NX PX ttl`; after a failed attempt a fixed 10 ms sleep (cut to what is left of the wait); release by a compare-and-delete Lua script called with `EVALSHA` (`EVAL` once on `NOSCRIPT`).',
  );
  out.push(
    "- **store-only** (a reference, not a peer; uncontended, many-keys, uncontended-3-nodes and uncontended-5-nodes only): rxjs-lock's `RedisLockStore` called directly, no engine: `store.tryAcquire(key, token, ttl)`, the baseline's 10 ms sleep after a refusal, then `store.release(key, token, grant)`; on the quorums the same with `new RedlockStore(clients)` (its defaults, one connection to each server, as rxjs-lock's run builds it). Between it and rxjs-lock lies the engine's cost; between it and the baseline, the store's protocol (its scripts' work on the server, their calls on the client).",
  );
  out.push(
    "- **script-floor** (a reference, not a peer; uncontended and many-keys only): the baseline's loop, but acquire and release are each one Lua script called with `EVALSHA`, in the store's shape (the four keys of a lock, the same arguments), doing only what the baseline does (`SET NX PX`; compare-and-delete). The least a lock pays whose acquire and release are one script call each. A target it misses too is out of reach of any script-based lock in this layout.",
  );
  out.push(
    "- **fenced-floor** (a reference, not a peer; uncontended and many-keys only): script-floor's loop, but each script does what rxjs-lock's store's scripts must do when nobody waits for the key, and no more. Acquire: no line, place or fence record beside the key (one `EXISTS` of three keys), `SET NX PX`, and a fence seeded from the server's clock (`TIME`). Release: compare, then, with no line beside the key, delete the key and its places (`GET`, `EXISTS`, `DEL`). The least a lock pays that fences from the server's clock and keeps a fair line, with one script per call. Between it and script-floor lies what fencing and the line cost on the server; between store-only and it, the store's client side (its keys, arguments and answers). A target it misses too is out of reach of any lock that fences and queues this way.",
  );
  out.push(
    "- **quorum-floor** (a reference, not a peer; uncontended-3-nodes and uncontended-5-nodes only): the least a *fenced* quorum lock pays in one round per acquire and one per release. Acquire: one Lua script per node with `EVALSHA`, sent to every node at once, in the quorum store's shape (its four keys, the same arguments: token, ttl, fences, floor, inbox), doing only `SET key token NX PX ttl` and, when set, the fence: the server's clock (`TIME`) in fence seeds, the node's fence record, the block start = max(clock, record, floor − 1), the record written with `SET … PX` until the clock passes it. Held once a majority granted (fence: the highest answered), as redlock decides; else released everywhere and tried again after the baseline's 10 ms sleep. Release: compare-and-delete on every node, done once a majority answered, as redlock's. The floor is the client's wall clock + 2 ms, right only because every server runs on this machine: a reference, not a safe lock. Between it and redlock lies what fencing costs (a fence record written on each node on each grant; redlock has no fences); between rxjs-lock and it, the engine, the quorum store's client machinery, its hints and the rest of its scripts' work (the release's fence record among it). A target it misses too is out of reach of any lock that fences this way.",
  );
  out.push('');
  out.push(
    "Every library gets new connections for each run (one ioredis connection per process, plus any the library opens itself), a warm-up on a private key before the measurement, and the same lease (10 s) and wait limit (10 s; 1 s in seed-000 and cancel-storm). Scenarios run in the order shown, libraries in the order of the tables. Worker processes are forked once and serve every run in turn; each collects its garbage (a full `gc()`) after the warm-up, right before the run starts, so no run pays for the garbage of the one before it. In hot-key-cluster each library gets an ioredis `Cluster` client (ioredis' defaults) where it otherwise gets a `Redis` connection, and nothing else changes.",
  );
  out.push('');
  out.push('## What the columns mean');
  out.push('');
  out.push(
    '- **acq/s**: acquisitions per second. In the time-bound scenarios, the acquisitions that started inside the window, divided by the window; loops stop starting new work at the deadline and finish what they are doing.',
  );
  out.push(
    "- **round trips/acq**: commands the library's connections sent, counted in the client by patching ioredis's `Redis.prototype.sendCommand`, divided by acquisitions. A pipeline or MULTI batch counts once (ioredis passes a batch writer, marked `isPipeline`, with each of its commands); SUBSCRIBE and UNSUBSCRIBE count; messages the server pushes do not. Connections are recognised by their connection name, which `duplicate()` keeps. A self-check against known traffic runs at the start of every bench.",
  );
  out.push(
    "- **server cmds/acq**: the sum of `calls` over every `cmdstat_*` of `INFO commandstats` (reset with `CONFIG RESETSTAT` before each run; the bench's own INFO, CONFIG, FLUSHALL and QUIT left out), divided by acquisitions. Redis counts the commands a Lua script runs too, so a script call costs 1 round trip but 2–3 server commands.",
  );
  out.push(
    '- **wait**: from the call to acquire until the lock is held, for acquisitions that got the lock (p50, p99, max). A wait that ran out is a **timeout** instead.',
  );
  out.push(
    "- **wait max after 1 s** (hot-key): the longest wait among the acquisitions that *started* (acquire called) at least 1 s after the run's start, the same cut for every library, so the first queue forming is left out; **whole run** beside it counts every acquisition. The max-wait targets use the first.",
  );
  out.push(
    "- **Jain**: Jain's fairness index over the acquisitions of every loop of every process, (Σx)² / (n·Σx²): 1 = every loop got the same share, 1/n = one loop got everything. **min–max per loop** shows the spread.",
  );
  out.push(
    "- **overlaps**: pairs of critical sections on the same key that ran at the same time, across all processes (`findOverlaps` from `rxjs-lock/testing`). Each section is timestamped right after the acquire resolves and right before release is called. Must be 0. Not given on a semaphore or a read-write lock, whose holders share by design: there **most holders at once** (semaphore-hot: never above the limit), **most readers / writers at once** and **writer overlaps** (read-mostly: pairs of sections open together of which one writes, must be 0) come from the same timestamps, swept in time order (a section that exits at the very instant another enters does not overlap it); a run that breaks its lock's guarantee is failed.",
  );
  out.push(
    "- **handoff p50**: from a holder's timestamp right before it calls release to the moment the next holder's acquire resolves, counted only when the two are in different processes. Each acquisition is paired with the latest release that precedes it, in any process.",
  );
  out.push(
    "- **bus pub/sub msgs/acq** (hot-key-cluster): pub/sub messages the masters sent each other over the cluster bus during the run (growth of `cluster_stats_messages_publish_sent` and `cluster_stats_messages_publishshard_sent` in `CLUSTER INFO`, summed over the masters), divided by acquisitions; **per handoff**, divided by the hand-offs between processes instead (the hand-offs a wake-up message announces; the handoff column counts them). A `PUBLISH` costs one message to every other node; an `SPUBLISH` one to each replica of the key's master (none here).",
  );
  out.push(
    '- **floor** (PING, pub/sub hop, hop after a turn): what one Redis round trip, and one message from one process through Redis to another, cost in the hot-key layout with no lock at all, the message once with the client CPU idle and once right after another process had it for a turn; the hand-off target is a multiple of the idle hop (of the PING when the hop is missing), and its MISS line gives the ratio to the hop after a turn.',
  );
  out.push(
    '- **engine CPU** (engine-cpu): CPU time (`process.cpuUsage()`, user + system) and wall time per sequential acquire + release pair on the in-memory store: what the engine itself costs, without Redis.',
  );
  out.push(
    '- **same loop re-acquires**: share of acquisitions whose preceding release (the latest before it, in any process) came from the same loop — a loop that releases and wins again at once starves the others.',
  );
  out.push(
    '- **orphaned keys** (cancel-storm): lock keys still in Redis once every cancelled acquisition and release has settled; each stays locked until its TTL.',
  );
  out.push(
    "- **other processes / steal** (under each table): the share of the machine's CPU time, between `go` and the last report, used by processes that are not the bench's (its workers, its redis-server, itself), and stolen by the hypervisor — from `/proc/stat` and `/proc/<pid>/stat`. A run next to a busy neighbour (a test suite, a build) is flagged, so a strange number can be told from a disturbed one.",
  );
  out.push('');
  out.push(
    'Timestamps are `process.hrtime.bigint()` (`monotonicNs()` in `rxjs-lock/testing`), which on Linux reads CLOCK_MONOTONIC: one clock for the whole machine, so times taken in different processes can be compared and subtracted. The parent gives every worker the same start time and deadline on that clock.',
  );
  out.push('');
  out.push(
    'Raw numbers: `bench/results/latest.json` (one row per scenario × library × variant, with per-command counts) and `bench/results/meta.json` (machine, versions, settings).',
  );
  out.push('');
  return out.join('\n');
}

/** Writes the page and the chart; returns the paths written. */
export function writeReport(rows: readonly ResultRow[]): string[] {
  writeFileSync(DOC_PATH, renderReport(rows));
  writeFileSync(CHART_PATH, renderChart(rows));
  return [DOC_PATH, CHART_PATH];
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  const rows = readRows(process.argv[2] ?? LATEST_PATH);
  for (const path of writeReport(rows)) console.log(`wrote ${path}`);
}
