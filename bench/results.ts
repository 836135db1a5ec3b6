/**
 * The shape of bench/results/latest.json: an array of rows, one per (scenario, library, variant).
 * Times in ms, rates per second; null where a figure does not apply to the scenario (or the run
 * was skipped or failed).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
export const LATEST_PATH = fileURLToPath(new URL('./results/latest.json', import.meta.url));
export const META_PATH = fileURLToPath(new URL('./results/meta.json', import.meta.url));

/** Where and how the row was measured (repeated in every row so the file stands on its own). */
export interface RowEnv {
  readonly runAt: string;
  readonly redisVersion: string;
  readonly node: string;
  readonly cpu: string;
  readonly cores: number;
  /** `redis@1 clients@0`, or null when nothing was pinned. */
  readonly pinned: string | null;
  readonly quick: boolean;
  /** The rxjs-lock source measured: `git describe`-like commit of this repository, and whether src/ had uncommitted changes. */
  readonly rxjsLockSource: string;
}

export interface ResultRow {
  readonly scenario: string;
  readonly library: string;
  readonly variant: string;
  readonly label: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly status: 'ok' | 'skipped' | 'failed';
  readonly note: string | null;
  readonly processes: number;
  readonly loopsPerProcess: number;
  readonly hold: string;
  /** null in the probe rows (engine-cpu, floor), which take no lock on Redis. */
  readonly waitTimeoutMs: number | null;
  readonly ttlMs: number | null;
  readonly env: RowEnv;

  /** Time-bound scenarios: the contention window; others: start → last loop finished. */
  readonly durationSec: number | null;
  readonly acquisitions: number | null;
  /** Time-bound scenarios: acquisitions that started inside the window, per second of it. */
  readonly acquisitionsPerSec: number | null;
  /** Commands the library's connections sent (a pipeline or MULTI batch counts once). */
  readonly roundTrips: number | null;
  readonly roundTripsPerAcquisition: number | null;
  /** Sum of `calls` over `INFO commandstats` (including commands run inside Lua), bench housekeeping excluded. */
  readonly serverCommands: number | null;
  readonly serverCommandsPerAcquisition: number | null;
  /** CPU time of the Redis server's main thread (`INFO cpu`) per acquisition, in µs: what the server pays for one acquire + release, network reads and writes included. */
  readonly serverCpuUsPerAcquisition: number | null;
  readonly commands: Readonly<Record<string, number>> | null;
  /** `cmdstat_set` calls during the run (SETs inside scripts included). */
  readonly setCommands: number | null;
  readonly setBefore: number | null;
  readonly setAfter: number | null;
  /** Start of acquire → lock held. */
  readonly waitP50Ms: number | null;
  readonly waitP99Ms: number | null;
  readonly waitMaxMs: number | null;
  /** Hot-key scenarios: the after-warm-up figures count acquisitions that *started* at least this many seconds after the run's origin (1 s; less in quick runs). */
  readonly warmupCutSec: number | null;
  /** Longest wait among the acquisitions that started at least `warmupCutSec` after the origin (`waitMaxMs` is the whole run's). */
  readonly waitMaxAfterWarmupMs: number | null;
  /** Acquisitions that started at least `warmupCutSec` after the origin (and got the lock). */
  readonly acquisitionsAfterWarmup: number | null;
  /**
   * Hot-key scenarios: the longest garbage-collection pause of any worker process that began after
   * `warmupCutSec`, in ms (Node's `gc` performance entries: the main thread's pause, not the
   * incremental marking steps between). A pause in the process that holds the key, or is next for
   * it, is added to every wait behind it.
   */
  readonly gcPauseMaxMs?: number | null;
  /** Hot-key scenarios: the full (major) collections of all worker processes after `warmupCutSec`. */
  readonly gcMajorPauses?: number | null;
  /** Jain's fairness index over acquisitions per loop (every loop of every process). */
  readonly jain: number | null;
  readonly perLoopMin: number | null;
  readonly perLoopMax: number | null;
  readonly timeouts: number | null;
  readonly errors: number | null;
  /** Overlapping pairs of critical sections on one key, across all processes. */
  readonly overlaps: number | null;
  /** Release (holder's timestamp right before the call) → next holder's acquire resolved, other process. */
  readonly handoffP50Ms: number | null;
  readonly handoffP99Ms: number | null;
  readonly handoffs: number | null;
  /** % of acquisitions whose preceding release came from the same loop. */
  readonly sameLoopReacquirePct: number | null;
  /** Acquire start → release resolved (uncontended). */
  readonly pairP50Ms: number | null;
  readonly pairP99Ms: number | null;
  readonly successes: number | null;
  readonly failures: number | null;
  readonly stormAttempts: number | null;
  readonly cancelledWhileWaiting: number | null;
  /** cancel-storm: lock keys still in Redis after everything settled. */
  readonly orphanedKeys: number | null;
  /** % of the machine's CPU time used by processes other than the bench's during the run (from /proc). */
  readonly otherCpuPct: number | null;
  /** % of the machine's CPU time stolen by the hypervisor during the run. */
  readonly stealPct: number | null;

  /**
   * engine-cpu: rxjs-lock's own cost per sequential pair on the in-memory store, µs, the median
   * over the measured rounds. CPU is `process.cpuUsage()` (user + system, every thread of the
   * process, garbage collection included); wall is hrtime.
   * `cpu`/`wall`: firstValueFrom(locker.acquire(k)) + lease.release();
   * `withLock…`: lastValueFrom(of(1).pipe(locker.withLock(k)));
   * `mutex…`: a minimal in-process promise mutex, for reference (the floor of any promise-based lock).
   */
  readonly cpuUsPerPair: number | null;
  readonly wallUsPerPair: number | null;
  readonly withLockCpuUsPerPair: number | null;
  readonly withLockWallUsPerPair: number | null;
  readonly mutexCpuUsPerPair: number | null;
  readonly mutexWallUsPerPair: number | null;
  /** engine-cpu: the in-memory store alone (tryAcquire + release, awaited), CPU µs per pair. */
  readonly storeCpuUsPerPair: number | null;
  /** engine-cpu: the engine's own CPU per pair: `cpuUsPerPair − storeCpuUsPerPair`. */
  readonly engineOwnCpuUsPerPair: number | null;
  /** engine-cpu: acquire + release pairs measured (after the warm-up), all rounds. */
  readonly enginePairs: number | null;
  /** engine-cpu: every measured round as it came (method, pairs, CPU µs, wall µs). */
  readonly engineRounds: readonly { readonly method: string; readonly pairs: number; readonly cpuUs: number; readonly wallUs: number }[] | null;

  /** floor: sequential PING round trips from one worker process, ms. */
  readonly pingP50Ms: number | null;
  readonly pingP99Ms: number | null;
  readonly pings: number | null;
  /** floor: PUBLISH call in one worker process → message callback in another, ms. */
  readonly hopP50Ms: number | null;
  readonly hopP99Ms: number | null;
  readonly hops: number | null;
  /**
   * floor, third part: the same hop right after the sending process kept the client CPU busy for a
   * turn of `turnMs` (a turn passed round every worker), ms. (Absent in results of older versions.)
   */
  readonly turnMs?: number | null;
  readonly turnHopP50Ms?: number | null;
  readonly turnHopP99Ms?: number | null;
  readonly turnHops?: number | null;
  /**
   * floor, third part: its length, and each worker's time from the end of its turn to the start of
   * its next after the cut (what a hot-key-0ms loop waits with no lock), ms. (Absent in older results.)
   */
  readonly turnRingSec?: number | null;
  readonly turnGapP50Ms?: number | null;
  readonly turnGapP99Ms?: number | null;
  readonly turnGapMaxMs?: number | null;
  readonly turnGaps?: number | null;
  /**
   * floor, fourth part: hot-key-1ms's turns with no lock (see `FloorSpec.holdRingMs` in
   * ./scenarios.ts): holds per second, and the loops' waits between their holds after the cut, ms.
   * (Absent in results of older versions.)
   */
  readonly holdRingSec?: number | null;
  readonly holdRingHoldsPerSec?: number | null;
  readonly holdRingWaitP50Ms?: number | null;
  readonly holdRingWaitP99Ms?: number | null;
  readonly holdRingWaitMaxMs?: number | null;
  readonly holdRingWaits?: number | null;

  /**
   * Cluster scenarios: pub/sub messages the masters sent each other over the cluster bus during
   * the run, summed over the masters (growth of `CLUSTER INFO`'s
   * `cluster_stats_messages_publish_sent`: a `PUBLISH`, relayed to every other node; and
   * `cluster_stats_messages_publishshard_sent`: an `SPUBLISH`, relayed to the replicas of the
   * slot's shard only), and both per acquisition.
   */
  readonly busPublishMessages: number | null;
  readonly busPublishShardMessages: number | null;
  readonly busPubsubMessagesPerAcquisition: number | null;

  /** semaphore-hot: the semaphore's limit (permits), one permit per acquisition. */
  readonly permitLimit: number | null;
  /**
   * Scenarios on a shared lock (semaphore-hot, read-mostly): most critical sections open at once
   * on the key, from the recorded enter/exit timestamps of every process (see `concurrencyOf` in
   * ./metrics.ts). Above the semaphore's limit, the row is failed.
   */
  readonly maxHolders: number | null;
  /** read-mostly: most read sections open at once. */
  readonly maxReaders: number | null;
  /** read-mostly: most write sections open at once (1 at most, or the row is failed). */
  readonly maxWriters: number | null;
  /** read-mostly: pairs of sections open together of which one is a write (0, or the row is failed). */
  readonly writerOverlaps: number | null;
  /** read-mostly: acquisitions that read, and that wrote (the mutex variant counts its reads and writes alike). */
  readonly reads: number | null;
  readonly writes: number | null;
  /** read-mostly: the waits of the reads and of the writes, ms. */
  readonly readWaitP50Ms: number | null;
  readonly readWaitP99Ms: number | null;
  readonly writeWaitP50Ms: number | null;
  readonly writeWaitP99Ms: number | null;
}

/** The physical floor a hand-off is judged against: the pub/sub hop of the floor row, or its PING round trip if the hop is missing. */
export function physicalFloor(rows: readonly ResultRow[]): { readonly ms: number; readonly what: 'pub/sub hop p50' | 'PING p50' } | undefined {
  const floor = rows.find((r) => r.scenario === 'floor' && r.status === 'ok');
  if (!floor) return undefined;
  if (floor.hopP50Ms !== null && floor.hopP50Ms > 0) return { ms: floor.hopP50Ms, what: 'pub/sub hop p50' };
  if (floor.pingP50Ms !== null && floor.pingP50Ms > 0) return { ms: floor.pingP50Ms, what: 'PING p50' };
  return undefined;
}

/** The floor row's hop after a turn of work (see {@link ResultRow.turnHopP50Ms}), when the run measured it. */
export function floorAfterTurn(rows: readonly ResultRow[]): { readonly ms: number; readonly turnMs: number } | undefined {
  const floor = rows.find((r) => r.scenario === 'floor' && r.status === 'ok');
  if (!floor || floor.turnHopP50Ms == null || !(floor.turnHopP50Ms > 0) || floor.turnMs == null) return undefined;
  return { ms: floor.turnHopP50Ms, turnMs: floor.turnMs };
}

/** The floor row's gaps between a worker's turns in the turn ring (see {@link ResultRow.turnGapMaxMs}), when the run measured them. */
export function floorTurnGaps(rows: readonly ResultRow[]): { readonly maxMs: number; readonly p99Ms: number | null } | undefined {
  const floor = rows.find((r) => r.scenario === 'floor' && r.status === 'ok');
  if (!floor || floor.turnGapMaxMs == null || !(floor.turnGapMaxMs > 0)) return undefined;
  return { maxMs: floor.turnGapMaxMs, p99Ms: floor.turnGapP99Ms ?? null };
}

/** The floor row's hold ring (see {@link ResultRow.holdRingWaitMaxMs}), when the run measured it. */
export function floorHoldRing(
  rows: readonly ResultRow[],
): { readonly maxMs: number; readonly p99Ms: number | null; readonly holdsPerSec: number | null } | undefined {
  const floor = rows.find((r) => r.scenario === 'floor' && r.status === 'ok');
  if (!floor || floor.holdRingWaitMaxMs == null || !(floor.holdRingWaitMaxMs > 0)) return undefined;
  return { maxMs: floor.holdRingWaitMaxMs, p99Ms: floor.holdRingWaitP99Ms ?? null, holdsPerSec: floor.holdRingHoldsPerSec ?? null };
}

export function readRows(path = LATEST_PATH): ResultRow[] {
  const rows: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (!Array.isArray(rows)) throw new Error(`${path}: expected an array of result rows`);
  return rows as ResultRow[];
}
