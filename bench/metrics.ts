/**
 * Turns the workers' reports and Redis's counters into one result row. Pure functions, so the
 * arithmetic can be checked by eye.
 */
import { findOverlaps, type CriticalSection } from '../src/testing.js';
import type { BenchEntry } from './libraries.js';
import type { Noise } from './noise.js';
import { entryLabel, primitiveOf } from './libraries.js';
import type { EngineMethod, EngineRound, ProbeReport, Role, WorkerReport } from './protocol.js';
import type { ResultRow, RowEnv } from './results.js';
import { floorMeasuredMs, type ProbeSpec, type ScenarioSpec } from './scenarios.js';

/** Nearest-rank percentile of an ascending array; null when empty. */
export function percentile(ascending: readonly number[], p: number): number | null {
  if (ascending.length === 0) return null;
  const rank = Math.min(ascending.length, Math.max(1, Math.ceil(p * ascending.length)));
  return ascending[rank - 1]!;
}

/** Jain's fairness index: (Σx)² / (n·Σx²); 1 when every loop got the same share. */
export function jainIndex(counts: readonly number[]): number | null {
  if (counts.length === 0) return null;
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? null : (sum * sum) / (counts.length * squares);
}

/**
 * Commands the bench itself sends to the server (reading and resetting the statistics, flushing,
 * closing connections), which say nothing about what a lock costs.
 */
const HOUSEKEEPING = new Set(['info', 'config', 'flushall', 'quit']);

/** CPU seconds of the server's main thread (Redis ≥ 7 reports it apart from its I/O threads), from `INFO cpu`; null if absent. */
export function parseServerCpuSec(info: string): number | null {
  const field = (name: string) => {
    const m = new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info);
    return m ? Number(m[1]) : null;
  };
  const user = field('used_cpu_user_main_thread') ?? field('used_cpu_user');
  const sys = field('used_cpu_sys_main_thread') ?? field('used_cpu_sys');
  return user === null || sys === null ? null : user + sys;
}

/** `calls` per command from `INFO commandstats` (subcommands folded into their command), housekeeping left out. */
export function parseCommandStats(info: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:|\r\n]+)(?:\|[^:\r\n]*)?:calls=(\d+)/gm)) {
    const name = match[1]!.toLowerCase();
    if (HOUSEKEEPING.has(name)) continue;
    calls[name] = (calls[name] ?? 0) + Number(match[2]);
  }
  return calls;
}

/** Pub/sub messages a cluster node sent to other nodes over the cluster bus. */
export interface ClusterBusPubsub {
  /** `PUBLISH` relayed to every other node (`cluster_stats_messages_publish_sent`). */
  readonly publish: number;
  /** `SPUBLISH` relayed to the replicas of the slot's shard (`cluster_stats_messages_publishshard_sent`). */
  readonly publishShard: number;
}

/**
 * The pub/sub counters of a node's `CLUSTER INFO` (Redis 7 names; a counter still at 0 is not
 * listed, so it reads 0); null when `info` is not a CLUSTER INFO reply.
 */
export function parseClusterBusPubsub(info: string): ClusterBusPubsub | null {
  if (!/^cluster_state:/m.test(info)) return null;
  const counter = (name: string) => Number(new RegExp(`^cluster_stats_messages_${name}_sent:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { publish: counter('publish'), publishShard: counter('publishshard') };
}

/** `after − before` of each counter, summed over nodes (the same nodes, in the same order). */
export function clusterBusGrowth(before: readonly ClusterBusPubsub[], after: readonly ClusterBusPubsub[]): ClusterBusPubsub {
  if (before.length !== after.length) throw new Error(`cluster bus counters of ${before.length} nodes before the run, ${after.length} after`);
  let publish = 0;
  let publishShard = 0;
  after.forEach((a, i) => {
    publish += a.publish - before[i]!.publish;
    publishShard += a.publishShard - before[i]!.publishShard;
  });
  return { publish, publishShard };
}

/** One acquisition as the parent sees it. */
export interface Acquisition {
  readonly worker: number;
  /** Globally unique loop id (worker × loops + loop). */
  readonly loop: number;
  readonly keyIndex: number;
  readonly role: Role;
  readonly enter: number;
  readonly exit: number;
}

export function acquisitionsOf(reports: readonly WorkerReport[]): Acquisition[] {
  const all: Acquisition[] = [];
  let loopBase = 0;
  reports.forEach((r, worker) => {
    for (let i = 0; i < r.enterNs.length; i++) {
      all.push({ worker, loop: loopBase + r.loop[i]!, keyIndex: r.keyIndex[i]!, role: r.role?.[i] ?? 'lock', enter: r.enterNs[i]!, exit: r.exitNs[i]! });
    }
    loopBase += r.loops;
  });
  return all;
}

/** Pairs of critical sections on the same key that ran at the same time, across all processes. */
export function countOverlaps(acquisitions: readonly Acquisition[]): number {
  const byKey = new Map<number, CriticalSection[]>();
  for (const a of acquisitions) {
    const list = byKey.get(a.keyIndex) ?? [];
    list.push({ enter: BigInt(a.enter), exit: BigInt(a.exit), owner: `${a.worker}` });
    byKey.set(a.keyIndex, list);
  }
  let overlaps = 0;
  for (const sections of byKey.values()) overlaps += findOverlaps(sections).length;
  return overlaps;
}

/** How many critical sections of one key were open at once, at the worst moment. */
export interface Concurrency {
  /** Most sections open at once, whatever their role (a semaphore's holders). */
  readonly maxHolders: number;
  /** Most `read` sections open at once. */
  readonly maxReaders: number;
  /** Most `write` sections open at once. */
  readonly maxWriters: number;
  /** Pairs of sections that were open at the same time and of which at least one is a `write`: must be 0. */
  readonly writerOverlaps: number;
}

/**
 * The {@link Concurrency} of the sections, key by key (the worst key's maxima, the overlaps of
 * every key summed). A sweep over the enter and exit timestamps (one clock for every process): a
 * section is open from its enter to its exit, and one that exits at the very instant another
 * enters does not overlap it (as `findOverlaps`). Each overlapping pair with a writer is counted
 * once, when its later section enters.
 *
 * The timestamps are taken right after the acquire resolved and right before release is called,
 * inside the lock's real hold, so a count here never exceeds what the lock let in: a correct
 * semaphore of `limit` can never show more than `limit` holders, nor a correct read-write lock a
 * writer beside anyone.
 */
export function concurrencyOf(acquisitions: readonly Pick<Acquisition, 'keyIndex' | 'role' | 'enter' | 'exit'>[]): Concurrency {
  const byKey = new Map<number, Array<Pick<Acquisition, 'role' | 'enter' | 'exit'>>>();
  for (const a of acquisitions) {
    const list = byKey.get(a.keyIndex) ?? [];
    list.push(a);
    byKey.set(a.keyIndex, list);
  }
  let maxHolders = 0;
  let maxReaders = 0;
  let maxWriters = 0;
  let writerOverlaps = 0;
  for (const sections of byKey.values()) {
    // (time, +1 enter / −1 exit, is a write, is a read): exits first at equal times.
    const events: Array<readonly [number, 1 | -1, boolean, boolean]> = [];
    for (const s of sections) {
      events.push([s.enter, 1, s.role === 'write', s.role === 'read'], [s.exit, -1, s.role === 'write', s.role === 'read']);
    }
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let readers = 0;
    let writers = 0;
    for (const [, step, write, read] of events) {
      if (step === 1) writerOverlaps += write ? open : writers;
      open += step;
      if (write) writers += step;
      if (read) readers += step;
      maxHolders = Math.max(maxHolders, open);
      maxReaders = Math.max(maxReaders, readers);
      maxWriters = Math.max(maxWriters, writers);
    }
  }
  return { maxHolders, maxReaders, maxWriters, writerOverlaps };
}

/**
 * Why a run on a shared lock broke its guarantee, or null: a semaphore showed more holders than
 * its limit, or a writer was open beside another section. A run that did is a failed row, not a figure.
 */
export function sharedViolation(limit: number | null, c: Concurrency): string | null {
  if (limit !== null && c.maxHolders > limit) return `${c.maxHolders} holders at once on a semaphore of ${limit}`;
  if (c.writerOverlaps > 0)
    return `a writer overlapped another holder (${c.writerOverlaps} pairs; up to ${c.maxWriters} writers and ${c.maxReaders} readers at once)`;
  return null;
}

export interface HandoffStats {
  /** Release (right before the call) → next holder's acquire resolved, when the two are in different processes, ms ascending. */
  readonly handoffsMs: number[];
  /** Share of acquisitions whose preceding release (latest one before it, any process) came from the same loop. */
  readonly sameLoopPct: number | null;
}

/**
 * For one key: pairs each acquisition with the latest release that precedes it in time across
 * all processes (release = the holder's timestamp right before it called release).
 */
export function handoffStats(acquisitions: readonly Acquisition[]): HandoffStats {
  const releases = [...acquisitions].sort((a, b) => a.exit - b.exit);
  const exits = releases.map((r) => r.exit);
  const handoffsMs: number[] = [];
  let paired = 0;
  let sameLoop = 0;
  for (const a of acquisitions) {
    // Last release with exit <= a.enter (binary search).
    let lo = 0;
    let hi = exits.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (exits[mid]! <= a.enter) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) continue;
    const previous = releases[lo - 1]!;
    paired++;
    if (previous.loop === a.loop) sameLoop++;
    if (previous.worker !== a.worker) handoffsMs.push((a.enter - previous.exit) / 1e6);
  }
  handoffsMs.sort((x, y) => x - y);
  return { handoffsMs, sameLoopPct: paired === 0 ? null : (100 * sameLoop) / paired };
}

const round = (value: number | null, digits: number): number | null => (value === null || !Number.isFinite(value) ? null : Number(value.toFixed(digits)));
const perAcquisition = (n: number, acquisitions: number): number | null => (acquisitions === 0 ? null : round(n / acquisitions, 3));

export interface RunFacts {
  readonly spec: ScenarioSpec;
  readonly entry: BenchEntry;
  readonly reports: readonly WorkerReport[];
  /** ns between the run's start and the deadline of time-bound runs. */
  readonly windowNs: number;
  readonly commandsBefore: Record<string, number>;
  readonly commandsAfter: Record<string, number>;
  readonly orphanedKeys: number | null;
  /** µs of CPU the server's main thread used during the run (null where not measured). */
  readonly serverCpuUs: number | null;
  /** Cluster scenarios: pub/sub messages the masters sent over the cluster bus during the run (null elsewhere). */
  readonly clusterBus: ClusterBusPubsub | null;
  readonly noise: Noise | undefined;
  readonly env: RowEnv;
}

/** Every figure of a row, null: what a run that did not happen has, and what a row does not measure. */
function noFigures() {
  return {
    durationSec: null,
    acquisitions: null,
    acquisitionsPerSec: null,
    roundTrips: null,
    roundTripsPerAcquisition: null,
    serverCommands: null,
    serverCommandsPerAcquisition: null,
    serverCpuUsPerAcquisition: null,
    commands: null,
    setCommands: null,
    setBefore: null,
    setAfter: null,
    waitP50Ms: null,
    waitP99Ms: null,
    waitMaxMs: null,
    warmupCutSec: null,
    waitMaxAfterWarmupMs: null,
    acquisitionsAfterWarmup: null,
    gcPauseMaxMs: null,
    gcMajorPauses: null,
    jain: null,
    perLoopMin: null,
    perLoopMax: null,
    timeouts: null,
    errors: null,
    overlaps: null,
    handoffP50Ms: null,
    handoffP99Ms: null,
    handoffs: null,
    sameLoopReacquirePct: null,
    pairP50Ms: null,
    pairP99Ms: null,
    successes: null,
    failures: null,
    stormAttempts: null,
    cancelledWhileWaiting: null,
    orphanedKeys: null,
    otherCpuPct: null,
    stealPct: null,
    cpuUsPerPair: null,
    wallUsPerPair: null,
    withLockCpuUsPerPair: null,
    withLockWallUsPerPair: null,
    mutexCpuUsPerPair: null,
    mutexWallUsPerPair: null,
    storeCpuUsPerPair: null,
    engineOwnCpuUsPerPair: null,
    enginePairs: null,
    engineRounds: null,
    pingP50Ms: null,
    pingP99Ms: null,
    pings: null,
    hopP50Ms: null,
    hopP99Ms: null,
    hops: null,
    turnMs: null,
    turnHopP50Ms: null,
    turnHopP99Ms: null,
    turnHops: null,
    turnRingSec: null,
    turnGapP50Ms: null,
    turnGapP99Ms: null,
    turnGapMaxMs: null,
    turnGaps: null,
    holdRingSec: null,
    holdRingHoldsPerSec: null,
    holdRingWaitP50Ms: null,
    holdRingWaitP99Ms: null,
    holdRingWaitMaxMs: null,
    holdRingWaits: null,
    busPublishMessages: null,
    busPublishShardMessages: null,
    busPubsubMessagesPerAcquisition: null,
    permitLimit: null,
    maxHolders: null,
    maxReaders: null,
    maxWriters: null,
    writerOverlaps: null,
    reads: null,
    writes: null,
    readWaitP50Ms: null,
    readWaitP99Ms: null,
    writeWaitP50Ms: null,
    writeWaitP99Ms: null,
  } satisfies Omit<ResultRow, keyof ReturnType<typeof baseFields> | 'status' | 'note'>;
}

export function emptyRow(spec: ScenarioSpec, entry: BenchEntry, status: 'skipped' | 'failed', note: string, env: RowEnv): ResultRow {
  return { ...baseFields(spec, entry, env), status, note, ...noFigures() };
}

function baseFields(
  spec: ScenarioSpec,
  entry: BenchEntry,
  env: RowEnv,
): Pick<ResultRow, 'scenario' | 'library' | 'variant' | 'label' | 'options' | 'processes' | 'loopsPerProcess' | 'hold' | 'waitTimeoutMs' | 'ttlMs' | 'env'> {
  return {
    scenario: spec.name,
    library: entry.library,
    variant: entry.variant,
    label: entryLabel(entry),
    options: entry.storeOptions ? { ...entry.options, storeOptions: entry.storeOptions } : entry.options,
    processes: spec.processes,
    loopsPerProcess: spec.storm ? spec.storm.concurrency : spec.loopsPerProcess,
    hold: spec.hold.kind === 'timer' ? `${spec.hold.ms} ms timer` : spec.hold.kind === 'yield' ? 'setImmediate' : 'none',
    waitTimeoutMs: spec.waitTimeoutMs,
    ttlMs: spec.ttlMs,
    env,
  };
}

export function buildRow(f: RunFacts): ResultRow {
  const { spec, reports } = f;
  const acquisitions = acquisitionsOf(reports);
  const count = acquisitions.length;
  const finishedNs = Math.max(0, ...reports.map((r) => r.finishedNs));
  const timeBound = spec.stop.kind === 'time' && !spec.storm;
  const durationSec = (timeBound ? f.windowNs : finishedNs) / 1e9;
  const inWindow = timeBound ? acquisitions.filter((a) => a.enter < f.windowNs).length : count;

  const waits = reports.flatMap((r) => r.waitMs).sort((a, b) => a - b);
  const afterWarmup = spec.waitWarmupCutSec === null ? undefined : waitsAfter(reports, spec.waitWarmupCutSec * 1e9);
  const pairs = reports.flatMap((r) => r.pairMs).sort((a, b) => a - b);
  const perLoop = new Array<number>(reports.reduce((n, r) => n + r.loops, 0)).fill(0);
  for (const a of acquisitions) perLoop[a.loop] = (perLoop[a.loop] ?? 0) + 1;

  const commands: Record<string, number> = {};
  for (const [name, calls] of Object.entries(f.commandsAfter)) {
    const delta = calls - (f.commandsBefore[name] ?? 0);
    if (delta > 0) commands[name] = delta;
  }
  const serverCommands = Object.values(commands).reduce((a, b) => a + b, 0);
  const roundTrips = reports.reduce((n, r) => n + r.roundTrips, 0);
  const timeouts = reports.reduce((n, r) => n + r.timeouts, 0);
  const errors = reports.reduce((n, r) => n + r.errors, 0);
  const errorSamples = [...new Set(reports.flatMap((r) => r.errorSamples))].slice(0, 3);

  const sharedKey = spec.keyMode === 'shared' && !spec.storm;
  const handoff = sharedKey ? handoffStats(acquisitions) : undefined;
  const multiProcess = spec.processes > 1;
  const storm = spec.storm ? reports.map((r) => r.storm) : undefined;
  const sumStorm = (pick: (t: NonNullable<WorkerReport['storm']>) => number) => (storm ? storm.reduce((n, t) => n + (t ? pick(t) : 0), 0) : null);

  // Shared locks: how many held at once (a semaphore's holders, a read-write lock's readers and
  // writers), and whether that broke the lock's guarantee. Sections sharing a key are no overlap
  // there unless the run took a mutex.
  const sharedScenario = spec.primitive.kind !== 'mutex';
  const mutexRun = primitiveOf(spec, f.entry).kind === 'mutex';
  const limit = spec.primitive.kind === 'semaphore' ? spec.primitive.limit : null;
  const concurrency = sharedScenario ? concurrencyOf(acquisitions) : undefined;
  const violation = concurrency ? sharedViolation(limit, concurrency) : null;
  const readWrite = spec.primitive.kind === 'read-write';
  const waitsOf = (role: Role) => reports.flatMap((r) => r.waitMs.filter((_, i) => r.role?.[i] === role)).sort((a, b) => a - b);
  const readWaits = readWrite ? waitsOf('read') : [];
  const writeWaits = readWrite ? waitsOf('write') : [];
  const errorNote = errors > 0 ? `${errors} errors: ${errorSamples.join(' | ')}` : null;

  return {
    ...baseFields(spec, f.entry, f.env),
    status: violation === null ? 'ok' : 'failed',
    note: violation === null ? errorNote : `${violation}${errorNote ? `; ${errorNote}` : ''}`,
    // (the probes' figures stay null; the others are measured below, in the same key order)
    ...noFigures(),
    durationSec: round(durationSec, 3),
    acquisitions: count,
    acquisitionsPerSec: durationSec > 0 ? round(inWindow / durationSec, 1) : null,
    roundTrips,
    roundTripsPerAcquisition: perAcquisition(roundTrips, count),
    serverCommands,
    serverCommandsPerAcquisition: perAcquisition(serverCommands, count),
    serverCpuUsPerAcquisition: f.serverCpuUs === null || count === 0 ? null : round(f.serverCpuUs / count, 2),
    commands,
    setCommands: commands.set ?? 0,
    setBefore: f.commandsBefore.set ?? 0,
    setAfter: f.commandsAfter.set ?? 0,
    waitP50Ms: round(percentile(waits, 0.5), 3),
    waitP99Ms: round(percentile(waits, 0.99), 3),
    waitMaxMs: round(waits.at(-1) ?? null, 3),
    warmupCutSec: spec.waitWarmupCutSec,
    waitMaxAfterWarmupMs: afterWarmup ? round(afterWarmup.maxMs, 3) : null,
    acquisitionsAfterWarmup: afterWarmup ? afterWarmup.count : null,
    ...gcPauses(reports),
    jain: round(jainIndex(perLoop), 4),
    perLoopMin: perLoop.length > 0 ? Math.min(...perLoop) : null,
    perLoopMax: perLoop.length > 0 ? Math.max(...perLoop) : null,
    timeouts,
    errors,
    overlaps: mutexRun ? countOverlaps(acquisitions) : null,
    handoffP50Ms: handoff && multiProcess ? round(percentile(handoff.handoffsMs, 0.5), 3) : null,
    handoffP99Ms: handoff && multiProcess ? round(percentile(handoff.handoffsMs, 0.99), 3) : null,
    handoffs: handoff && multiProcess ? handoff.handoffsMs.length : null,
    sameLoopReacquirePct: handoff && perLoop.length > 1 ? round(handoff.sameLoopPct, 2) : null,
    pairP50Ms: spec.recordPairs ? round(percentile(pairs, 0.5), 4) : null,
    pairP99Ms: spec.recordPairs ? round(percentile(pairs, 0.99), 4) : null,
    successes: count,
    failures: spec.storm ? sumStorm((t) => t.timeouts + t.errors) : timeouts + errors,
    stormAttempts: sumStorm((t) => t.attempts),
    cancelledWhileWaiting: sumStorm((t) => t.cancelled),
    orphanedKeys: f.orphanedKeys,
    otherCpuPct: f.noise?.otherCpuPct ?? null,
    stealPct: f.noise?.stealPct ?? null,
    busPublishMessages: f.clusterBus?.publish ?? null,
    busPublishShardMessages: f.clusterBus?.publishShard ?? null,
    busPubsubMessagesPerAcquisition: f.clusterBus ? perAcquisition(f.clusterBus.publish + f.clusterBus.publishShard, count) : null,
    permitLimit: limit,
    maxHolders: concurrency?.maxHolders ?? null,
    maxReaders: readWrite && concurrency ? concurrency.maxReaders : null,
    maxWriters: readWrite && concurrency ? concurrency.maxWriters : null,
    writerOverlaps: readWrite && concurrency ? concurrency.writerOverlaps : null,
    reads: readWrite ? readWaits.length : null,
    writes: readWrite ? writeWaits.length : null,
    readWaitP50Ms: readWrite ? round(percentile(readWaits, 0.5), 3) : null,
    readWaitP99Ms: readWrite ? round(percentile(readWaits, 0.99), 3) : null,
    writeWaitP50Ms: readWrite ? round(percentile(writeWaits, 0.5), 3) : null,
    writeWaitP99Ms: readWrite ? round(percentile(writeWaits, 0.99), 3) : null,
  };
}

/**
 * The waits of the acquisitions that *started* (acquire called) at least `cutNs` after the run's
 * origin: started = lock held − wait. The same rule for every library.
 */
export function waitsAfter(reports: readonly WorkerReport[], cutNs: number): { readonly count: number; readonly maxMs: number | null } {
  let count = 0;
  let maxMs: number | null = null;
  for (const r of reports) {
    for (let i = 0; i < r.enterNs.length; i++) {
      const wait = r.waitMs[i]!;
      if (r.enterNs[i]! - wait * 1e6 < cutNs) continue;
      count++;
      if (maxMs === null || wait > maxMs) maxMs = wait;
    }
  }
  return { count, maxMs };
}

// ---------------------------------------------------------------------------------------------
// Probe rows (engine-cpu, floor)

function probeBase(
  spec: ProbeSpec,
  env: RowEnv,
): Pick<ResultRow, 'scenario' | 'library' | 'variant' | 'label' | 'options' | 'processes' | 'loopsPerProcess' | 'hold' | 'waitTimeoutMs' | 'ttlMs' | 'env'> {
  const engine = spec.name === 'engine-cpu';
  return {
    scenario: spec.name,
    library: engine ? 'rxjs-lock' : 'no lock',
    variant: 'default',
    label: engine ? 'rxjs-lock (in-memory store)' : 'no lock (ioredis + Redis)',
    options: {},
    processes: spec.processes,
    loopsPerProcess: 1,
    hold: 'none',
    waitTimeoutMs: null,
    ttlMs: null,
    env,
  };
}

export function emptyProbeRow(spec: ProbeSpec, status: 'skipped' | 'failed', note: string, env: RowEnv): ResultRow {
  return { ...probeBase(spec, env), status, note, ...noFigures() };
}

/** Median of the per-pair values of one method's rounds (µs), or null. */
function medianPerPair(rounds: readonly EngineRound[], method: EngineMethod, pick: (r: EngineRound) => number): number | null {
  const values = rounds
    .filter((r) => r.method === method && r.pairs > 0)
    .map((r) => pick(r) / r.pairs)
    .sort((a, b) => a - b);
  if (values.length === 0) return null;
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
}

export function buildProbeRow(spec: ProbeSpec, probes: readonly ProbeReport[], noise: Noise | undefined, env: RowEnv): ResultRow {
  const base = {
    ...probeBase(spec, env),
    status: 'ok' as const,
    note: null,
    ...noFigures(),
    otherCpuPct: noise?.otherCpuPct ?? null,
    stealPct: noise?.stealPct ?? null,
  };
  if (spec.name === 'engine-cpu') {
    const report = probes.find((p) => p.kind === 'engine-cpu');
    if (report?.kind !== 'engine-cpu') return emptyProbeRow(spec, 'failed', 'no engine-cpu report', env);
    const rounds = report.rounds;
    const us = (method: EngineMethod, pick: (r: EngineRound) => number) => round(medianPerPair(rounds, method, pick), 3);
    const acquirePairs = rounds.filter((r) => r.method === 'acquire').reduce((n, r) => n + r.pairs, 0);
    const wallUs = rounds.reduce((n, r) => n + r.wallUs, 0);
    return {
      ...base,
      durationSec: round(wallUs / 1e6, 3),
      acquisitions: acquirePairs,
      cpuUsPerPair: us('acquire', (r) => r.cpuUs),
      wallUsPerPair: us('acquire', (r) => r.wallUs),
      withLockCpuUsPerPair: us('withLock', (r) => r.cpuUs),
      withLockWallUsPerPair: us('withLock', (r) => r.wallUs),
      mutexCpuUsPerPair: us('mutex', (r) => r.cpuUs),
      mutexWallUsPerPair: us('mutex', (r) => r.wallUs),
      storeCpuUsPerPair: us('store', (r) => r.cpuUs),
      engineOwnCpuUsPerPair: (() => {
        const pair = medianPerPair(rounds, 'acquire', (r) => r.cpuUs);
        const store = medianPerPair(rounds, 'store', (r) => r.cpuUs);
        return pair === null || store === null ? null : round(pair - store, 3);
      })(),
      enginePairs: acquirePairs,
      engineRounds: rounds.map((r) => ({ method: r.method, pairs: r.pairs, cpuUs: Math.round(r.cpuUs), wallUs: Math.round(r.wallUs) })),
    };
  }
  const floors = probes.flatMap((p) => (p.kind === 'floor' ? [p] : []));
  const pings = floors.flatMap((p) => p.pingMs).sort((a, b) => a - b);
  const hops = floors.flatMap((p) => p.hopMs).sort((a, b) => a - b);
  // (a worker of an older bench version reports none)
  const turnHops = floors.flatMap((p) => p.turnHopMs ?? []).sort((a, b) => a - b);
  const holdWaits = floors.flatMap((p) => p.holdWaitsMs ?? []).sort((a, b) => a - b);
  const turnGaps = floors.flatMap((p) => p.turnGapsMs ?? []).sort((a, b) => a - b);
  const holds = floors.reduce((n, p) => n + (p.holds ?? 0), 0);
  return {
    ...base,
    durationSec: round(floorMeasuredMs(spec) / 1000, 3),
    note:
      hops.length === 0
        ? 'no pub/sub hop was recorded'
        : pings.length === 0
          ? 'no PING was recorded'
          : turnHops.length === 0 && floors.some((p) => p.turnHopMs !== undefined)
            ? 'no hop after a turn was recorded'
            : null,
    pingP50Ms: round(percentile(pings, 0.5), 4),
    pingP99Ms: round(percentile(pings, 0.99), 4),
    pings: pings.length,
    hopP50Ms: round(percentile(hops, 0.5), 4),
    hopP99Ms: round(percentile(hops, 0.99), 4),
    hops: hops.length,
    turnMs: spec.turnMs,
    turnHopP50Ms: round(percentile(turnHops, 0.5), 4),
    turnHopP99Ms: round(percentile(turnHops, 0.99), 4),
    turnHops: turnHops.length,
    turnRingSec: round(spec.turnRingMs / 1000, 3),
    turnGapP50Ms: round(percentile(turnGaps, 0.5), 3),
    turnGapP99Ms: round(percentile(turnGaps, 0.99), 3),
    turnGapMaxMs: turnGaps.length === 0 ? null : round(turnGaps[turnGaps.length - 1]!, 3),
    turnGaps: turnGaps.length,
    holdRingSec: round(spec.holdRingMs / 1000, 3),
    holdRingHoldsPerSec: spec.holdRingMs > 0 && holds > 0 ? round(holds / (spec.holdRingMs / 1000), 1) : null,
    holdRingWaitP50Ms: round(percentile(holdWaits, 0.5), 3),
    holdRingWaitP99Ms: round(percentile(holdWaits, 0.99), 3),
    holdRingWaitMaxMs: holdWaits.length === 0 ? null : round(holdWaits[holdWaits.length - 1]!, 3),
    holdRingWaits: holdWaits.length,
  };
}

/** The workers' GC pauses after the warm-up cut: the longest, and how many full collections (null when none measured them). */
export function gcPauses(reports: readonly Pick<WorkerReport, 'gcPauseMaxMs' | 'gcMajorPauses'>[]): {
  gcPauseMaxMs: number | null;
  gcMajorPauses: number | null;
} {
  const measured = reports.filter((r) => r.gcPauseMaxMs !== null && r.gcPauseMaxMs !== undefined);
  if (measured.length === 0) return { gcPauseMaxMs: null, gcMajorPauses: null };
  return {
    gcPauseMaxMs: round(Math.max(...measured.map((r) => r.gcPauseMaxMs!)), 1),
    gcMajorPauses: measured.reduce((n, r) => n + (r.gcMajorPauses ?? 0), 0),
  };
}
