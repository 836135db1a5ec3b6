/**
 * The targets rxjs-lock (default settings) must meet, judged against the peers measured in the
 * same run. A MISS is reported, never fatal.
 */
import { PEERS, REFERENCES } from './libraries.js';
import { floorAfterTurn, floorHoldRing, floorTurnGaps, physicalFloor, type ResultRow } from './results.js';
import type { ScenarioName } from './scenarios.js';

export interface TargetResult {
  readonly scenario: string;
  readonly target: string;
  readonly status: 'PASS' | 'MISS';
  /** What rxjs-lock measured, and against what. */
  readonly measured: string;
  /** rxjs-lock ÷ the reference (best peer, baseline, the variant or the physical floor), where the target is a ratio. */
  readonly ratio: number | null;
}

const usable = (row: ResultRow | undefined): row is ResultRow => row !== undefined && row.status === 'ok';
const fmt = (n: number | null | undefined, digits = 2): string => (n === null || n === undefined ? 'n/a' : n.toFixed(digits));

function find(rows: readonly ResultRow[], scenario: string, library: string, variant = 'default'): ResultRow | undefined {
  return rows.find((r) => r.scenario === scenario && r.library === library && r.variant === variant);
}

/** The peer with the most acquisitions per second in `scenario`. */
export function bestPeer(rows: readonly ResultRow[], scenario: string): ResultRow | undefined {
  const peers = rows.filter(
    (r) => r.scenario === scenario && PEERS.includes(r.library as (typeof PEERS)[number]) && usable(r) && r.acquisitionsPerSec !== null,
  );
  return peers.sort((a, b) => b.acquisitionsPerSec! - a.acquisitionsPerSec!)[0];
}

/** Hand-off p50 may be at most this many times the physical floor of the same run. */
export const HANDOFF_FACTOR = 1.5;
const HANDOFF_TARGET = `handoff p50 ≤ ${HANDOFF_FACTOR} × physical floor (same run)`;
/** The quorum store's uncontended pair may take at most this many times rxjs-lock's on one server. */
export const QUORUM_VS_SINGLE = 1.5;
/** rxjs-lock's hot-key throughput on the Cluster must be at least this share of its own on one server (hot-key-1ms). */
export const CLUSTER_VS_SINGLE = 0.8;
/** Cluster-bus pub/sub messages per acquisition rxjs-lock (sharded wake-ups) may cause on the Cluster. */
export const CLUSTER_BUS_PER_ACQUISITION = 0.1;
/** rxjs-lock's read-write lock must reach this many times its own mutex's throughput on read-mostly's workload. */
export const READ_WRITE_VS_MUTEX = 2;
/** The engine's own CPU per acquire + release pair on the in-memory store, µs. */
export const ENGINE_CPU_US = 2;
const maxWaitTarget = (max: number) => `max wait ≤ ${max} ms after 1 s warm-up`;

export function evaluateTargets(rows: readonly ResultRow[]): TargetResult[] {
  const results: TargetResult[] = [];
  const judge = (scenario: string, target: string, pass: boolean | null, measured: string, ratio: number | null = null) =>
    results.push({
      scenario,
      target,
      status: pass === true ? 'PASS' : 'MISS',
      measured,
      ratio: ratio === null || !Number.isFinite(ratio) ? null : Number(ratio.toFixed(3)),
    });
  const missing = (scenario: string, target: string, why: string) => judge(scenario, target, null, why);

  const limit = (scenario: string, target: string, value: number | null, max: number, digits = 2) =>
    judge(scenario, target, value !== null && value <= max, `${fmt(value, digits)} (limit ${max})`);
  const atLeast = (scenario: string, target: string, value: number | null, min: number) =>
    judge(scenario, target, value !== null && value >= min, `${fmt(value, 4)} (minimum ${min})`);

  /**
   * Max wait after the warm-up cut (the target), with the whole run's beside it; for hot-key-1ms
   * also the floor row's hold ring: the same turns with no lock, on the same machine in the same run.
   */
  const maxWait = (scenario: string, rx: ResultRow, max: number) => {
    const value = rx.waitMaxAfterWarmupMs;
    const cut = rx.warmupCutSec === null ? 'n/a' : `${rx.warmupCutSec} s`;
    const ring = scenario === 'hot-key-1ms' ? floorHoldRing(rows) : scenario === 'hot-key-0ms' ? floorTurnGaps(rows) : undefined;
    const what = scenario === 'hot-key-1ms' ? "the same turns with no lock, floor row's hold ring" : "turns of work with no lock, floor row's turn ring";
    const ringNote =
      ring === undefined
        ? ''
        : `; floor (${what}): max ${fmt(ring.maxMs, 1)} ms, p99 ${fmt(ring.p99Ms, 1)} ms${value === null ? '' : ` — ×${fmt(value / ring.maxMs)}`}`;
    judge(
      scenario,
      maxWaitTarget(max),
      value !== null && value <= max,
      `${fmt(value, 1)} ms after ${cut} (limit ${max}); whole run ${fmt(rx.waitMaxMs, 1)} ms${gcNote(rx)}${ringNote}`,
    );
  };

  const throughput = (scenario: string, factor: number) => {
    const target = `acquisitions/s ≥ ${factor} × best peer`;
    const rx = find(rows, scenario, 'rxjs-lock');
    const peer = bestPeer(rows, scenario);
    if (!usable(rx) || !peer) return missing(scenario, target, !usable(rx) ? 'rxjs-lock did not run' : 'no peer ran');
    const ratio = rx.acquisitionsPerSec! / peer.acquisitionsPerSec!;
    judge(scenario, target, ratio >= factor, `${fmt(rx.acquisitionsPerSec, 0)} vs ${peer.library} ${fmt(peer.acquisitionsPerSec, 0)}: ×${fmt(ratio)}`, ratio);
  };

  // hot-key-1ms
  {
    const s = 'hot-key-1ms';
    const rx = find(rows, s, 'rxjs-lock');
    throughput(s, 0.95);
    if (usable(rx)) {
      limit(s, 'round trips / acquisition ≤ 1.0', rx.roundTripsPerAcquisition, 1.0);
      atLeast(s, 'Jain fairness ≥ 0.98', rx.jain, 0.98);
      maxWait(s, rx, 100);
      limit(s, '0 timeouts', rx.timeouts, 0, 0);
      limit(s, '0 overlaps', rx.overlaps, 0, 0);
    } else {
      for (const t of ['round trips / acquisition ≤ 1.0', 'Jain fairness ≥ 0.98', maxWaitTarget(100), '0 timeouts', '0 overlaps'])
        missing(s, t, 'rxjs-lock did not run');
    }
  }

  // hot-key-0ms
  {
    const s = 'hot-key-0ms';
    const rx = find(rows, s, 'rxjs-lock');
    throughput(s, 2);
    if (usable(rx)) {
      atLeast(s, 'Jain fairness ≥ 0.98', rx.jain, 0.98);
      maxWait(s, rx, 50);
      const floor = physicalFloor(rows);
      if (!floor)
        missing(
          s,
          HANDOFF_TARGET,
          `handoff p50 ${fmt(rx.handoffP50Ms, 3)} ms; no floor measured in this run (scenario floor ${find(rows, 'floor', 'no lock')?.status ?? 'not run'})`,
        );
      else {
        const ratio = rx.handoffP50Ms === null ? null : rx.handoffP50Ms / floor.ms;
        // What a MISS is up against: the same hop right after another process had the CPU for a turn.
        const afterTurn = floorAfterTurn(rows);
        const turnText =
          afterTurn === undefined || rx.handoffP50Ms === null
            ? ''
            : `; the hop after a ${afterTurn.turnMs} ms turn of work (floor row, same layout) ${fmt(afterTurn.ms, 3)} ms: ×${fmt(rx.handoffP50Ms / afterTurn.ms)}`;
        judge(
          s,
          HANDOFF_TARGET,
          ratio !== null && ratio <= HANDOFF_FACTOR,
          `${fmt(rx.handoffP50Ms, 3)} ms vs floor (${floor.what}) ${fmt(floor.ms, 3)} ms: ×${fmt(ratio)} (limit ×${HANDOFF_FACTOR})${turnText}`,
          ratio,
        );
      }
    } else {
      for (const t of ['Jain fairness ≥ 0.98', maxWaitTarget(50), HANDOFF_TARGET]) missing(s, t, 'rxjs-lock did not run');
    }
  }

  // engine-cpu: the engine's own CPU per pair on the in-memory store (no Redis)
  {
    const s = 'engine-cpu';
    const target = `engine's own CPU per acquire+release pair (in-memory store) ≤ ${ENGINE_CPU_US} µs`;
    const rx = find(rows, s, 'rxjs-lock');
    if (!usable(rx) || rx.engineOwnCpuUsPerPair === null)
      missing(s, target, rx ? `engine-cpu ${rx.status}${rx.note ? `: ${rx.note.slice(0, 70)}` : ''}` : 'engine-cpu did not run');
    else {
      const extra = [
        `the pair ${fmt(rx.cpuUsPerPair)} µs less the store alone ${fmt(rx.storeCpuUsPerPair)} µs`,
        `wall ${fmt(rx.wallUsPerPair)} µs`,
        `withLock ${fmt(rx.withLockCpuUsPerPair)} µs CPU`,
        `in-process mutex ${fmt(rx.mutexCpuUsPerPair)} µs CPU`,
      ];
      judge(s, target, rx.engineOwnCpuUsPerPair <= ENGINE_CPU_US, `${fmt(rx.engineOwnCpuUsPerPair)} µs CPU/pair (limit ${ENGINE_CPU_US}; ${extra.join(', ')})`);
    }
  }

  // seed-000: the local gate against the same engine without it
  {
    const s = 'seed-000';
    const gated = find(rows, s, 'rxjs-lock');
    const ungated = find(rows, s, 'rxjs-lock', 'localGate-off');
    const setTarget = 'SET commands ≥ 90% fewer with the local gate than without';
    const failTarget = 'no more failures with the local gate than without';
    if (!usable(gated) || !usable(ungated)) {
      const note = ungated?.note ? `: ${ungated.note.length > 70 ? `${ungated.note.slice(0, 69)}…` : ungated.note}` : '';
      const why = !usable(gated) ? 'rxjs-lock did not run' : `variant localGate-off ${ungated?.status ?? 'not run'}${note}`;
      missing(s, setTarget, why);
      missing(s, failTarget, why);
    } else {
      const ratio = ungated.setCommands! === 0 ? null : gated.setCommands! / ungated.setCommands!;
      const fewer = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? 'n/a' : `${fmt(100 * (1 - a / b), 1)}% fewer`);
      judge(
        s,
        setTarget,
        ratio !== null && ratio <= 0.1,
        `${gated.setCommands} vs ${ungated.setCommands} SETs: ${fewer(gated.setCommands, ungated.setCommands)} (round trips ${gated.roundTrips} vs ${ungated.roundTrips}: ${fewer(gated.roundTrips, ungated.roundTrips)}; server commands ${fewer(gated.serverCommands, ungated.serverCommands)})`,
        ratio,
      );
      judge(s, failTarget, gated.failures! <= ungated.failures!, `${gated.failures} vs ${ungated.failures} failures`);
    }
  }

  // uncontended: lock + unlock latency against the hand-written baseline
  {
    const s = 'uncontended';
    const target = 'pair p50 ≤ 1.15 × baseline';
    const rx = find(rows, s, 'rxjs-lock');
    const base = find(rows, s, 'baseline');
    if (!usable(rx) || !usable(base) || rx.pairP50Ms === null || base.pairP50Ms === null)
      missing(s, target, !usable(rx) ? 'rxjs-lock did not run' : 'baseline did not run');
    else {
      const ratio = rx.pairP50Ms / base.pairP50Ms;
      const floors = references(rows, s, (r) => (r.pairP50Ms === null ? null : r.pairP50Ms / base.pairP50Ms!));
      judge(
        s,
        target,
        ratio <= 1.15,
        `${fmt(rx.pairP50Ms * 1000, 1)} µs vs ${fmt(base.pairP50Ms * 1000, 1)} µs: ×${fmt(ratio)}${serverCpu(rx, base)}${floors}`,
        ratio,
      );
    }
  }

  // many-keys: throughput against the baseline
  {
    const s = 'many-keys';
    const target = 'acquisitions/s ≥ 0.9 × baseline';
    const rx = find(rows, s, 'rxjs-lock');
    const base = find(rows, s, 'baseline');
    if (!usable(rx) || !usable(base)) missing(s, target, !usable(rx) ? 'rxjs-lock did not run' : 'baseline did not run');
    else {
      const ratio = rx.acquisitionsPerSec! / base.acquisitionsPerSec!;
      const floors = references(rows, s, (r) => (r.acquisitionsPerSec === null ? null : r.acquisitionsPerSec / base.acquisitionsPerSec!));
      judge(
        s,
        target,
        ratio >= 0.9,
        `${fmt(rx.acquisitionsPerSec, 0)} vs ${fmt(base.acquisitionsPerSec, 0)}: ×${fmt(ratio)}${serverCpu(rx, base)}${floors}`,
        ratio,
      );
    }
  }
  // The quorum store (RedlockStore) on 3 and 5 independent servers, against redlock on the same servers
  for (const nodes of [3, 5]) {
    {
      const s = `uncontended-${nodes}-nodes`;
      const rx = find(rows, s, 'rxjs-lock');
      const single = find(rows, 'uncontended', 'rxjs-lock');
      const redlock = find(rows, s, 'redlock');
      const vsSingle = `pair p50 ≤ ${QUORUM_VS_SINGLE} × rxjs-lock on one server (uncontended)`;
      const vsRedlock = "pair p50 < redlock's (same servers)";
      if (!usable(rx) || rx.pairP50Ms === null) {
        const why = rx ? `rxjs-lock ${rx.status}${rx.note ? `: ${rx.note.slice(0, 70)}` : ''}` : 'rxjs-lock did not run';
        missing(s, vsSingle, why);
        missing(s, vsRedlock, why);
        continue;
      }
      if (!usable(single) || single.pairP50Ms === null) missing(s, vsSingle, 'uncontended (one server) did not run');
      else {
        const ratio = rx.pairP50Ms / single.pairP50Ms;
        // The same references against the one-server figure, and redlock's own: what a quorum over
        // these servers costs anyone, fenced or not, on this machine.
        const versusSingle = (r: ResultRow) => (r.pairP50Ms === null ? null : r.pairP50Ms / single.pairP50Ms!);
        const peer = usable(redlock) ? versusSingle(redlock) : null;
        const floors = references(rows, s, versusSingle);
        judge(
          s,
          vsSingle,
          ratio <= QUORUM_VS_SINGLE,
          `${fmt(rx.pairP50Ms * 1000, 1)} µs vs ${fmt(single.pairP50Ms * 1000, 1)} µs: ×${fmt(ratio)}${peer === null ? '' : `; redlock ×${fmt(peer)}`}${floors}`,
          ratio,
        );
      }
      if (!usable(redlock) || redlock.pairP50Ms === null) missing(s, vsRedlock, 'redlock did not run');
      else {
        const ratio = rx.pairP50Ms / redlock.pairP50Ms;
        const floors = references(rows, s, (r) => (r.pairP50Ms === null ? null : r.pairP50Ms / redlock.pairP50Ms!));
        judge(
          s,
          vsRedlock,
          ratio < 1,
          `${fmt(rx.pairP50Ms * 1000, 1)} µs vs ${fmt(redlock.pairP50Ms * 1000, 1)} µs: ×${fmt(ratio)}${serverCpu(rx, redlock)}${floors}`,
          ratio,
        );
      }
    }
    {
      const s = `hot-key-${nodes}-nodes`;
      const rx = find(rows, s, 'rxjs-lock');
      throughput(s, 1);
      if (usable(rx)) {
        limit(s, '0 timeouts', rx.timeouts, 0, 0);
        limit(s, '0 overlaps', rx.overlaps, 0, 0);
      } else for (const t of ['0 timeouts', '0 overlaps']) missing(s, t, 'rxjs-lock did not run');
    }
  }

  // hot-key-cluster: rxjs-lock on a 3-master Redis Cluster, against itself on one server and
  // against its broadcast variant (wake-ups over PUBLISH)
  {
    const s = 'hot-key-cluster';
    const rx = find(rows, s, 'rxjs-lock');
    const single = find(rows, 'hot-key-1ms', 'rxjs-lock');
    const broadcast = find(rows, s, 'rxjs-lock', 'broadcast');
    const vsSingle = `acquisitions/s ≥ ${CLUSTER_VS_SINGLE} × rxjs-lock on one server (hot-key-1ms)`;
    const bus = `cluster-bus pub/sub messages / acquisition ≤ ${CLUSTER_BUS_PER_ACQUISITION} and < broadcast variant's`;
    const why = rx ? `rxjs-lock ${rx.status}${rx.note ? `: ${rx.note.slice(0, 70)}` : ''}` : 'rxjs-lock did not run';
    if (!usable(rx)) {
      missing(s, vsSingle, why);
      missing(s, bus, why);
    } else {
      if (!usable(single) || single.acquisitionsPerSec === null || rx.acquisitionsPerSec === null) missing(s, vsSingle, 'hot-key-1ms (one server) did not run');
      else {
        const ratio = rx.acquisitionsPerSec / single.acquisitionsPerSec;
        judge(
          s,
          vsSingle,
          ratio >= CLUSTER_VS_SINGLE,
          `${fmt(rx.acquisitionsPerSec, 0)} vs ${fmt(single.acquisitionsPerSec, 0)} on one server: ×${fmt(ratio, 3)}`,
          ratio,
        );
      }
      const sharded = rx.busPubsubMessagesPerAcquisition ?? null;
      if (sharded === null) missing(s, bus, 'no cluster-bus counters in this row');
      else if (!usable(broadcast) || broadcast.busPubsubMessagesPerAcquisition === null) {
        judge(s, bus, null, `${fmt(sharded, 3)} (limit ${CLUSTER_BUS_PER_ACQUISITION}); variant broadcast ${broadcast?.status ?? 'not run'}`);
      } else {
        const other = broadcast.busPubsubMessagesPerAcquisition;
        judge(
          s,
          bus,
          sharded <= CLUSTER_BUS_PER_ACQUISITION && sharded < other,
          `${fmt(sharded, 3)} vs broadcast ${fmt(other, 3)} (limit ${CLUSTER_BUS_PER_ACQUISITION}; publish ${rx.busPublishMessages} + publishshard ${rx.busPublishShardMessages} vs ${broadcast.busPublishMessages} + ${broadcast.busPublishShardMessages})`,
          other === 0 ? null : sharded / other,
        );
      }
    }
  }
  // semaphore-hot: rxjs-lock's semaphore against redis-semaphore's Semaphore, same limit, same run
  {
    const s = 'semaphore-hot';
    const rx = find(rows, s, 'rxjs-lock');
    const peer = find(rows, s, 'redis-semaphore');
    const targets = [
      "acquisitions/s ≥ redis-semaphore's (Semaphore)",
      "Jain fairness ≥ redis-semaphore's",
      "round trips / acquisition ≤ redis-semaphore's",
    ] as const;
    if (!usable(rx) || !usable(peer)) {
      const why = !usable(rx) ? didNotRun('rxjs-lock', rx) : didNotRun('redis-semaphore', peer);
      for (const t of targets) missing(s, t, why);
    } else {
      const pair = (value: (r: ResultRow) => number | null, digits: number) => `${fmt(value(rx), digits)} vs ${fmt(value(peer), digits)}`;
      const throughputRatio = rx.acquisitionsPerSec === null || !peer.acquisitionsPerSec ? null : rx.acquisitionsPerSec / peer.acquisitionsPerSec;
      judge(
        s,
        targets[0],
        throughputRatio !== null && throughputRatio >= 1,
        `${pair((r) => r.acquisitionsPerSec, 0)}: ×${fmt(throughputRatio)}`,
        throughputRatio,
      );
      judge(
        s,
        targets[1],
        rx.jain !== null && peer.jain !== null && rx.jain >= peer.jain,
        pair((r) => r.jain, 4),
      );
      const trips = rx.roundTripsPerAcquisition === null || !peer.roundTripsPerAcquisition ? null : rx.roundTripsPerAcquisition / peer.roundTripsPerAcquisition;
      judge(s, targets[2], trips !== null && trips <= 1, `${pair((r) => r.roundTripsPerAcquisition, 2)}: ×${fmt(trips)}`, trips);
    }
  }

  // read-mostly: rxjs-lock's read-write lock against its own mutex on the same workload
  {
    const s = 'read-mostly';
    const target = `acquisitions/s ≥ ${READ_WRITE_VS_MUTEX} × rxjs-lock's mutex (same workload)`;
    const rw = find(rows, s, 'rxjs-lock');
    const mutex = find(rows, s, 'rxjs-lock', 'mutex');
    if (!usable(rw) || !usable(mutex) || rw.acquisitionsPerSec === null || !mutex.acquisitionsPerSec) {
      missing(s, target, !usable(rw) ? didNotRun('rxjs-lock', rw) : didNotRun('rxjs-lock (mutex)', mutex));
    } else {
      const ratio = rw.acquisitionsPerSec / mutex.acquisitionsPerSec;
      judge(s, target, ratio >= READ_WRITE_VS_MUTEX, `${fmt(rw.acquisitionsPerSec, 0)} vs ${fmt(mutex.acquisitionsPerSec, 0)}: ×${fmt(ratio)}`, ratio);
    }
  }
  return results;
}

/** Why a run gives no figure to judge: not run, skipped or failed (with the start of its note). */
function didNotRun(label: string, row: ResultRow | undefined): string {
  if (!row) return `${label} did not run`;
  const note = row.note ? `: ${row.note.length > 70 ? `${row.note.slice(0, 69)}…` : row.note}` : '';
  return `${label} ${row.status}${note}`;
}

/**
 * The references of `scenario` in the same run, each as `versus` gives it against the row the
 * target compares with (the baseline on one server, redlock on a quorum; see
 * bench/adapters/references.ts and quorumFloor.ts): the store with no engine, one trivial script
 * per call in the store's shape, the least a fenced quorum lock pays. A target the references miss
 * too is out of reach of anything built on this protocol, on scripts at all, or with fences.
 */
function references(rows: readonly ResultRow[], scenario: string, versus: (r: ResultRow) => number | null): string {
  const parts = REFERENCES.filter((ref) => ref.scenarios.includes(scenario as ScenarioName))
    .map(({ library }) => {
      const r = find(rows, scenario, library);
      const value = usable(r) ? versus(r) : null;
      return value === null ? null : `${library} ×${fmt(value)}`;
    })
    .filter((p) => p !== null);
  return parts.length === 0 ? '' : `; references: ${parts.join(', ')}`;
}

/** The server's CPU per acquisition of both (summed over the servers of a quorum), where measured: the part of a gap that the scripts' work on the server explains. */
function serverCpu(rx: ResultRow, base: ResultRow): string {
  if (rx.serverCpuUsPerAcquisition === null || base.serverCpuUsPerAcquisition === null) return '';
  return `; server CPU/acq ${fmt(rx.serverCpuUsPerAcquisition, 1)} vs ${fmt(base.serverCpuUsPerAcquisition, 1)} µs`;
}

export function formatTargetLine(t: TargetResult): string {
  return `${t.status}  ${t.scenario.padEnd(19)} ${t.target.padEnd(58)} ${t.measured}`;
}

/** The workers' longest GC pause after the cut, and their full collections, where measured. */
function gcNote(row: ResultRow): string {
  if (row.gcPauseMaxMs === null || row.gcPauseMaxMs === undefined) return '';
  const majors = row.gcMajorPauses ?? 0;
  return `; longest GC pause of a worker after the cut ${fmt(row.gcPauseMaxMs, 1)} ms (${majors} full collection${majors === 1 ? '' : 's'} in all)`;
}
