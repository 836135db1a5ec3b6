/**
 * What each benchmark scenario does, as plain data (it is sent to the worker processes as JSON),
 * and how the environment shortens or lengthens it.
 *
 * Environment:
 *   BENCH_QUICK=1             smoke-test lengths: the whole bench in well under a minute
 *   BENCH_SECONDS             contention time of the hot-key scenarios, semaphore-hot and read-mostly (default 10; quick 1)
 *   BENCH_SHORT_SECONDS       measured time of uncontended and many-keys (default 3; quick 0.5)
 *   BENCH_SEED_TRIES          tries per loop in seed-000 (default 400; quick 40)
 *   BENCH_STORM_ACQUISITIONS  acquisitions started in cancel-storm (default 4000; quick 800)
 *   BENCH_FLOOR_SECONDS       measured time of each part of floor: PING, pub/sub hop, hop after a turn (default 2; quick 0.5)
 *   BENCH_ENGINE_SECONDS      measured time of engine-cpu, per method (default 1.5; quick 0.15)
 *   BENCH_SCENARIOS           comma-separated subset of scenario names to run
 *   BENCH_LIBRARIES           comma-separated subset of libraries (rxjs-lock, redlock, redis-semaphore, baseline, store-only, script-floor, fenced-floor, quorum-floor)
 */
import { DEFAULTS } from '../src/options/LockerOptions.js';
import { numberFromEnv } from '../support/env.js';

/** Every scenario, in the order they run. */
export const SCENARIO_NAMES = [
  'engine-cpu',
  'uncontended',
  'many-keys',
  'floor',
  'hot-key-1ms',
  'hot-key-0ms',
  'seed-000',
  'cancel-storm',
  'semaphore-hot',
  'read-mostly',
  'uncontended-3-nodes',
  'uncontended-5-nodes',
  'hot-key-3-nodes',
  'hot-key-5-nodes',
  'hot-key-cluster',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];
/** Scenarios that measure something other than the lock libraries side by side (see {@link ProbeSpec}). */
export const PROBE_NAMES = ['engine-cpu', 'floor'] as const;
export type ProbeName = (typeof PROBE_NAMES)[number];
/** The scenarios the lock libraries run. */
export type LockScenarioName = Exclude<ScenarioName, ProbeName>;
export const isProbeName = (name: string): name is ProbeName => (PROBE_NAMES as readonly string[]).includes(name);
/**
 * Scenarios on several independent Redis servers (a quorum lock: rxjs-lock's RedlockStore against
 * redlock over the same servers); the others run on one.
 */
export const QUORUM_SCENARIOS: readonly LockScenarioName[] = ['uncontended-3-nodes', 'uncontended-5-nodes', 'hot-key-3-nodes', 'hot-key-5-nodes'];
/**
 * Scenarios on a private Redis Cluster that the bench starts for them (every library through one
 * ioredis `Cluster` client per process); the others run on independent servers.
 */
export const CLUSTER_SCENARIOS: readonly LockScenarioName[] = ['hot-key-cluster'];
/** Masters of the bench's Redis Cluster (no replicas). */
export const CLUSTER_MASTERS = 3;

/**
 * The hot-key scenarios' max-wait targets are judged on the acquisitions that *started* at
 * least this long after the run's time origin (the first second — connections, JIT, the first
 * queue forming — is left out the same way for every library); the whole-run figure is kept beside it.
 */
export const WAIT_WARMUP_CUT_SEC = 1;
/** The process layout of the hot-key scenarios, which floor copies. */
const HOT_PROCESSES = 8;
const HOT_LOOPS = 4;

/** The semaphore of semaphore-hot: this many holders at once. */
export const SEMAPHORE_LIMIT = 4;
/** The share of read-mostly's acquisitions that write (the rest read). */
export const READ_MOSTLY_WRITE_SHARE = 0.1;
/** Seed of read-mostly's draws (each loop's own generator is seeded from it, its worker and its index). */
const READ_MOSTLY_SEED = 15;

/**
 * What a scenario's acquisitions take. A run may take a mutex instead (an rxjs-lock variant that
 * compares its mutex with its read-write lock on the same workload, see ./libraries.ts); the
 * workload, reads and writes included, stays the scenario's.
 */
export type Primitive =
  | { readonly kind: 'mutex' }
  /** A counting semaphore: each acquisition takes 1 permit of `limit`. */
  | { readonly kind: 'semaphore'; readonly limit: number }
  /**
   * A read-write lock: each acquisition is a write with probability `writeShare`, else a read,
   * drawn by a generator per loop seeded from `seed`, the worker and the loop (the same draws in
   * every run of the scenario).
   */
  | { readonly kind: 'read-write'; readonly writeShare: number; readonly seed: number };

/** What a holder does between acquiring and releasing. */
export type Hold =
  | { readonly kind: 'none' }
  /** `setTimeout(ms)`: the holder sleeps on a timer. */
  | { readonly kind: 'timer'; readonly ms: number }
  /** `await new Promise(setImmediate)`: one turn of the event loop, so pending I/O is processed once. */
  | { readonly kind: 'yield' };

export type Stop =
  /** Each loop starts new acquisitions until the deadline (work in progress at the deadline finishes). */
  | { readonly kind: 'time'; readonly seconds: number }
  /** Each loop makes exactly this many tries, whatever their outcome. */
  | { readonly kind: 'tries'; readonly perLoop: number };

export interface StormShape {
  /** Acquisitions started in total (shared by the concurrent loops). */
  readonly acquisitions: number;
  /** How many hot keys they are spread over (uniformly at random). */
  readonly keys: number;
  /** Concurrent acquisitions in flight. */
  readonly concurrency: number;
  /** Each acquisition is cancelled after a delay drawn uniformly from [0, maxCancelMs). */
  readonly maxCancelMs: number;
  /** Pause after the last cancellation, before orphaned keys are counted. */
  readonly settleMs: number;
}

export interface ScenarioSpec {
  readonly name: LockScenarioName;
  readonly summary: string;
  /**
   * How many independent Redis servers the lock runs on: 1, or 3 and 5 in the quorum scenarios
   * (the bench's server and more started beside it, pinned like it).
   */
  readonly nodes: number;
  /**
   * 0, or the masters of the private Redis Cluster the scenario runs on (started by the bench for
   * it, pinned like its other servers; `nodes` is then 1: one Cluster client per process).
   */
  readonly clusterMasters: number;
  readonly processes: number;
  readonly loopsPerProcess: number;
  /** The lock name as the caller passes it to the library (each library may add its own prefix). */
  readonly key: string;
  /** `shared`: every loop of every process uses `key`; `per-loop`: loop i uses `key:i`. */
  readonly keyMode: 'shared' | 'per-loop';
  readonly hold: Hold;
  readonly stop: Stop;
  /** Wait limit of each acquisition (each library's own way of saying it; see the adapters). */
  readonly waitTimeoutMs: number;
  /** Lease length given to every library. */
  readonly ttlMs: number;
  /** Sequential acquire + release on a private key before the measurement starts. */
  readonly warmupMs: number;
  /** Record acquire-start → release-resolved time of each pair (pairP50Ms). */
  readonly recordPairs: boolean;
  readonly storm?: StormShape;
  /** What each acquisition takes: a mutex, a semaphore permit, or a read or write lock. */
  readonly primitive: Primitive;
  /**
   * Where Redis runs when pinning is available (the clients always run on the first CPU).
   * `split`: Redis on the second CPU. `shared-core`: Redis on the clients' CPU, for the one
   * latency scenario, where every hop between the two vCPUs of the reference machine costs a
   * wake-up of about 80 µs that would swamp the library's own cost (pair ≈ 200 µs instead of 30).
   */
  readonly placement: 'split' | 'shared-core';
  /**
   * Time-bound scenarios: acquisitions that started at least this many seconds after the run's
   * origin give the after-warm-up max wait (null: not recorded). {@link WAIT_WARMUP_CUT_SEC},
   * or half the window in quick runs whose window is shorter than 2 s.
   */
  readonly waitWarmupCutSec: number | null;
}

/**
 * A measurement that is not a lock library against its peers, run by the same worker processes,
 * pinned the same way, in the same run:
 *
 * - `engine-cpu`: rxjs-lock's own CPU per acquire + release pair on the in-memory store (no
 *   Redis, no I/O): one worker, sequential pairs, `process.cpuUsage()` and wall time over rounds
 *   after a warm-up. Beside it the same through `withLock` on `of(1)`, and a ten-line in-process
 *   promise mutex as the floor of any promise-based lock.
 * - `floor`: what Redis and the machine cost before any lock logic, in the hot-key layout
 *   (8 worker processes on the client CPU, Redis on its own CPU): one PING round trip, and one
 *   PUBLISH → message hop from one worker process to another. The hand-off target is judged
 *   against it.
 */
export type ProbeSpec = EngineCpuSpec | FloorSpec;

export interface EngineCpuSpec {
  readonly name: 'engine-cpu';
  readonly summary: string;
  readonly processes: 1;
  readonly placement: 'split';
  /** Sequential pairs of every method before measuring (JIT, inline caches). */
  readonly warmupMs: number;
  /** Measured rounds; each round runs every method for `roundMs`, in turn, so noise hits them alike. */
  readonly rounds: number;
  readonly roundMs: number;
}

export interface FloorSpec {
  readonly name: 'floor';
  readonly summary: string;
  /** As many processes as the hot-key scenarios, all alive and connected during both halves. */
  readonly processes: number;
  readonly placement: 'split';
  /** Sequential PINGs of worker 0 before `go` (connection, JIT). */
  readonly warmupPings: number;
  /** First half: worker 0 sends sequential PINGs for this long. */
  readonly pingMs: number;
  /** Pause between the halves. */
  readonly gapMs: number;
  /** Second half: workers 0 and 1 pass a timestamp back and forth over pub/sub for this long. */
  readonly hopMs: number;
  /** Hops sent in the first part of the second half are not recorded (JIT, first wake-ups). */
  readonly hopWarmupMs: number;
  /**
   * Third part, after another gap: a turn goes round every worker over pub/sub, each keeping the
   * CPU busy for `turnMs` before it publishes to the next (a hot-key holder's turn), for this long.
   */
  readonly turnRingMs: number;
  /** How long each worker of the ring works before passing the turn on: see {@link FLOOR_TURN_MS}. */
  readonly turnMs: number;
  /**
   * The ring runs as long as hot-key-0ms; each worker also records the time from the end of its
   * turn to the start of its next (what a hot-key-0ms loop waits, with no lock), once this long of
   * the part has passed (the scenarios' warm-up cut).
   */
  readonly turnRingCutMs: number;
  /**
   * Fourth part, after another gap, as long as hot-key-1ms runs: a turn goes round every worker
   * over pub/sub, and in its turn each worker gives each of its `loops` one hold of `holdMs` (a
   * timer, as hot-key-1ms holds), one after another, then publishes to the next. Each loop's wait,
   * from the end of its hold to the start of its next, is recorded once `holdRingCutMs` of the part
   * have passed: the waits of a perfectly fair lock that serves a process's waiters in one turn,
   * with no lock work at all — what the machine alone makes of hot-key-1ms's max wait.
   */
  readonly holdRingMs: number;
  readonly holdMs: number;
  readonly loops: number;
  readonly holdRingCutMs: number;
}

/**
 * The turn of the floor's third part: the cohort policy's turn in hot-key-0ms, where the 7 other
 * processes wait in the store's line: `roundMs / (7 + 1)`, 3 ms with the default `roundMs` of 24 ms.
 */
export const FLOOR_TURN_MS = DEFAULTS.cohort.roundMs / HOT_PROCESSES;
/** The pause between the floor's parts. */
export const FLOOR_GAP_MS = 100;

export interface BenchSettings {
  readonly quick: boolean;
  readonly hotSeconds: number;
  readonly shortSeconds: number;
  readonly seedTries: number;
  readonly stormAcquisitions: number;
  readonly floorSeconds: number;
  readonly engineSeconds: number;
  readonly scenarios: readonly ScenarioName[];
  readonly libraries: readonly string[] | undefined;
}

function listFromEnv(name: string, env: NodeJS.ProcessEnv): string[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  const quick = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
  const scenarios = listFromEnv('BENCH_SCENARIOS', env) ?? [...SCENARIO_NAMES];
  for (const name of scenarios) {
    if (!(SCENARIO_NAMES as readonly string[]).includes(name))
      throw new Error(`BENCH_SCENARIOS: unknown scenario "${name}" (known: ${SCENARIO_NAMES.join(', ')})`);
  }
  return {
    quick,
    hotSeconds: numberFromEnv('BENCH_SECONDS', quick ? 1 : 10, 0.1, env),
    shortSeconds: numberFromEnv('BENCH_SHORT_SECONDS', quick ? 0.5 : 3, 0.1, env),
    seedTries: Math.floor(numberFromEnv('BENCH_SEED_TRIES', quick ? 40 : 400, 1, env)),
    stormAcquisitions: Math.floor(numberFromEnv('BENCH_STORM_ACQUISITIONS', quick ? 800 : 4000, 1, env)),
    floorSeconds: numberFromEnv('BENCH_FLOOR_SECONDS', quick ? 0.5 : 2, 0.1, env),
    engineSeconds: numberFromEnv('BENCH_ENGINE_SECONDS', quick ? 0.15 : 1.5, 0.01, env),
    scenarios: scenarios as ScenarioName[],
    libraries: listFromEnv('BENCH_LIBRARIES', env),
  };
}

const MUTEX: Primitive = { kind: 'mutex' };

/** The lease every library gets: long enough that no holder in these scenarios ever loses it. */
const TTL_MS = 10_000;

/** The after-warm-up cut of a hot-key run of `seconds`: 1 s, or half a window shorter than 2 s (quick runs). */
function warmupCut(seconds: number): number {
  return seconds >= 2 * WAIT_WARMUP_CUT_SEC ? WAIT_WARMUP_CUT_SEC : Number((seconds / 2).toFixed(3));
}

export function scenarioSpecs(s: BenchSettings): ScenarioSpec[] {
  const all: ScenarioSpec[] = [
    {
      name: 'uncontended',
      summary: '1 process, 1 loop: acquire + release of one key, one after the other',
      nodes: 1,
      clusterMasters: 0,
      processes: 1,
      loopsPerProcess: 1,
      key: 'bench:uncontended',
      keyMode: 'shared',
      hold: { kind: 'none' },
      stop: { kind: 'time', seconds: s.shortSeconds },
      waitTimeoutMs: 10_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 200 : 1_000,
      recordPairs: true,
      primitive: MUTEX,
      placement: 'shared-core',
      waitWarmupCutSec: null,
    },
    {
      name: 'many-keys',
      summary: '1 process, 64 concurrent loops, each on its own key, one connection',
      nodes: 1,
      clusterMasters: 0,
      processes: 1,
      loopsPerProcess: 64,
      key: 'bench:many',
      keyMode: 'per-loop',
      hold: { kind: 'none' },
      stop: { kind: 'time', seconds: s.shortSeconds },
      waitTimeoutMs: 10_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 200 : 500,
      recordPairs: false,
      primitive: MUTEX,
      placement: 'split',
      waitWarmupCutSec: null,
    },
    {
      name: 'hot-key-1ms',
      summary: `${HOT_PROCESSES} processes × ${HOT_LOOPS} loops on one key, 1 ms hold (timer)`,
      nodes: 1,
      clusterMasters: 0,
      processes: HOT_PROCESSES,
      loopsPerProcess: HOT_LOOPS,
      key: 'bench:hot',
      keyMode: 'shared',
      hold: { kind: 'timer', ms: 1 },
      stop: { kind: 'time', seconds: s.hotSeconds },
      waitTimeoutMs: 10_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 100 : 300,
      recordPairs: false,
      primitive: MUTEX,
      placement: 'split',
      waitWarmupCutSec: warmupCut(s.hotSeconds),
    },
    {
      name: 'hot-key-0ms',
      summary: `${HOT_PROCESSES} processes × ${HOT_LOOPS} loops on one key, no hold (the critical section yields once: setImmediate)`,
      nodes: 1,
      clusterMasters: 0,
      processes: HOT_PROCESSES,
      loopsPerProcess: HOT_LOOPS,
      key: 'bench:hot',
      keyMode: 'shared',
      hold: { kind: 'yield' },
      stop: { kind: 'time', seconds: s.hotSeconds },
      waitTimeoutMs: 10_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 100 : 300,
      recordPairs: false,
      primitive: MUTEX,
      placement: 'split',
      waitWarmupCutSec: warmupCut(s.hotSeconds),
    },
    {
      name: 'seed-000',
      summary: `3 processes × 4 concurrent loops × ${s.seedTries} tries on "lock_key", 1000 ms wait limit, 1 ms hold (timer)`,
      nodes: 1,
      clusterMasters: 0,
      processes: 3,
      loopsPerProcess: 4,
      key: 'lock_key',
      keyMode: 'shared',
      hold: { kind: 'timer', ms: 1 },
      stop: { kind: 'tries', perLoop: s.seedTries },
      waitTimeoutMs: 1_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 100 : 300,
      recordPairs: false,
      primitive: MUTEX,
      placement: 'split',
      waitWarmupCutSec: null,
    },
    {
      name: 'cancel-storm',
      summary: `1 process: ${s.stormAcquisitions} acquisitions of 4 hot keys, 16 at a time, each cancelled after 0–5 ms (waiting or holding)`,
      nodes: 1,
      clusterMasters: 0,
      processes: 1,
      loopsPerProcess: 16,
      key: 'bench:storm',
      keyMode: 'per-loop',
      hold: { kind: 'none' },
      stop: { kind: 'tries', perLoop: 0 },
      waitTimeoutMs: 1_000,
      ttlMs: TTL_MS,
      warmupMs: s.quick ? 100 : 300,
      recordPairs: false,
      storm: { acquisitions: s.stormAcquisitions, keys: 4, concurrency: 16, maxCancelMs: 5, settleMs: 500 },
      primitive: MUTEX,
      placement: 'split',
      waitWarmupCutSec: null,
    },
  ];
  // The quorum scenarios: uncontended and hot-key-1ms as they are, on 3 and 5 servers.
  const model = (name: LockScenarioName) => all.find((spec) => spec.name === name)!;
  const quorum = [3, 5].flatMap((nodes): ScenarioSpec[] => [
    {
      ...model('uncontended'),
      name: `uncontended-${nodes}-nodes` as LockScenarioName,
      summary: `as uncontended, on a quorum of ${nodes} independent Redis servers (RedlockStore against redlock)`,
      nodes,
      key: 'bench:quorum:uncontended',
    },
    {
      ...model('hot-key-1ms'),
      name: `hot-key-${nodes}-nodes` as LockScenarioName,
      summary: `as hot-key-1ms (${HOT_PROCESSES} processes × ${HOT_LOOPS} loops, 1 ms hold), on a quorum of ${nodes} independent Redis servers`,
      nodes,
      key: 'bench:quorum:hot',
    },
  ]);
  // The cluster scenario: hot-key-1ms as it is, on the masters of a private Redis Cluster.
  const cluster: ScenarioSpec = {
    ...model('hot-key-1ms'),
    name: 'hot-key-cluster',
    summary: `as hot-key-1ms (${HOT_PROCESSES} processes × ${HOT_LOOPS} loops, 1 ms hold), on a private Redis Cluster of ${CLUSTER_MASTERS} masters (one ioredis Cluster client per process)`,
    clusterMasters: CLUSTER_MASTERS,
    key: 'bench:cluster:hot',
  };
  // The shared locks: hot-key-1ms's layout and hold, on a semaphore and on a read-write lock.
  const shared: ScenarioSpec[] = [
    {
      ...model('hot-key-1ms'),
      name: 'semaphore-hot',
      summary: `${HOT_PROCESSES} processes × ${HOT_LOOPS} loops on one semaphore of ${SEMAPHORE_LIMIT} permits, 1 permit each, 1 ms hold (timer)`,
      key: 'bench:semaphore',
      primitive: { kind: 'semaphore', limit: SEMAPHORE_LIMIT },
    },
    {
      ...model('hot-key-1ms'),
      name: 'read-mostly',
      summary: `${HOT_PROCESSES} processes × ${HOT_LOOPS} loops on one read-write lock, ${Math.round(100 * (1 - READ_MOSTLY_WRITE_SHARE))}% reads / ${Math.round(100 * READ_MOSTLY_WRITE_SHARE)}% writes (seeded per loop), 1 ms hold (timer)`,
      key: 'bench:read-mostly',
      primitive: { kind: 'read-write', writeShare: READ_MOSTLY_WRITE_SHARE, seed: READ_MOSTLY_SEED },
    },
  ];
  return [...all, ...shared, ...quorum, cluster].filter((spec) => s.scenarios.includes(spec.name));
}

export function probeSpecs(s: BenchSettings): ProbeSpec[] {
  const engineRounds = s.quick ? 3 : 5;
  const all: ProbeSpec[] = [
    {
      name: 'engine-cpu',
      summary: "1 process, no Redis: sequential acquire + release on createLocker()'s in-memory store; CPU and wall time per pair",
      processes: 1,
      placement: 'split',
      warmupMs: s.quick ? 200 : 1_000,
      rounds: engineRounds,
      roundMs: Math.max(10, Math.round((s.engineSeconds * 1000) / engineRounds)),
    },
    {
      name: 'floor',
      summary: `${HOT_PROCESSES} processes as in the hot-key scenarios, no lock: one PING round trip, then one PUBLISH → message hop between two of the processes, then the same hop right after the sender kept the client CPU busy for a ${FLOOR_TURN_MS} ms turn (a turn passed round all of them), then hot-key-1ms's turns with no lock (each process gives its ${HOT_LOOPS} loops one 1 ms hold per turn)`,
      processes: HOT_PROCESSES,
      placement: 'split',
      warmupPings: s.quick ? 200 : 1_000,
      pingMs: Math.round(s.floorSeconds * 1000),
      gapMs: FLOOR_GAP_MS,
      hopMs: Math.round(s.floorSeconds * 1000),
      hopWarmupMs: Math.round(Math.min(200, s.floorSeconds * 100)),
      turnRingMs: Math.round(s.hotSeconds * 1000),
      turnMs: FLOOR_TURN_MS,
      turnRingCutMs: Math.round(warmupCut(s.hotSeconds) * 1000),
      holdRingMs: Math.round(s.hotSeconds * 1000),
      holdMs: 1,
      loops: HOT_LOOPS,
      holdRingCutMs: Math.round(warmupCut(s.hotSeconds) * 1000),
    },
  ];
  // engine-cpu measures rxjs-lock alone: it runs only when rxjs-lock does.
  const wanted = (spec: ProbeSpec) =>
    s.scenarios.includes(spec.name) && (spec.name !== 'engine-cpu' || s.libraries === undefined || s.libraries.includes('rxjs-lock'));
  return all.filter(wanted);
}

/** Longest a probe may take before the harness gives up on it. */
export function probeDeadlineMs(spec: ProbeSpec): number {
  if (spec.name === 'engine-cpu') return spec.warmupMs + spec.rounds * spec.roundMs * 3 * 20 + 60_000;
  return floorMeasuredMs(spec) + 60_000;
}

/** How long the floor's four parts run, with their gaps. */
export function floorMeasuredMs(spec: FloorSpec): number {
  return spec.pingMs + spec.gapMs + spec.hopMs + spec.gapMs + spec.turnRingMs + spec.gapMs + spec.holdRingMs;
}

/** Both kinds of scenario, in the order they run ({@link SCENARIO_NAMES}). */
export type BenchStep = { readonly kind: 'lock'; readonly spec: ScenarioSpec } | { readonly kind: 'probe'; readonly spec: ProbeSpec };

export function benchSteps(s: BenchSettings): BenchStep[] {
  const steps: BenchStep[] = [
    ...probeSpecs(s).map((spec) => ({ kind: 'probe' as const, spec })),
    ...scenarioSpecs(s).map((spec) => ({ kind: 'lock' as const, spec })),
  ];
  return steps.sort((a, b) => SCENARIO_NAMES.indexOf(a.spec.name) - SCENARIO_NAMES.indexOf(b.spec.name));
}

/** The Redis key names (before any library prefix) a scenario locks, in key-index order. */
export function lockNames(spec: ScenarioSpec): string[] {
  if (spec.storm) return Array.from({ length: spec.storm.keys }, (_, i) => `${spec.key}:${i}`);
  if (spec.keyMode === 'shared') return [spec.key];
  return Array.from({ length: spec.loopsPerProcess }, (_, i) => `${spec.key}:${i}`);
}

/** Longest a run may take before the harness gives up on it (the workers are then killed). */
export function runDeadlineMs(spec: ScenarioSpec): number {
  const measured = spec.stop.kind === 'time' ? spec.stop.seconds * 1000 : 120_000;
  return measured + spec.warmupMs + spec.waitTimeoutMs * 2 + (spec.storm ? spec.storm.settleMs + 60_000 : 0) + 60_000;
}
