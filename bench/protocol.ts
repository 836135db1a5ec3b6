/**
 * What the bench's parent and its worker processes tell each other over the fork() IPC channel.
 * Worker processes live for the whole bench and serve one run after another; each run builds
 * the library afresh on new connections.
 *
 * Timestamps are `process.hrtime.bigint()` (CLOCK_MONOTONIC on Linux, one clock for every process
 * of the machine). They travel as nanosecond offsets from the run's start (plain numbers, exact
 * below 2^53 ns ≈ 104 days) or, for absolute values, as decimal strings.
 */
import type { BenchEntry } from './libraries.js';
import type { ProbeSpec, ScenarioSpec } from './scenarios.js';

export interface RunSetup {
  readonly runId: string;
  /** 0-based index of this worker within the run. */
  readonly worker: number;
  readonly entry: BenchEntry;
  readonly scenario: ScenarioSpec;
  /** The bench's Redis (the first of `nodes`). */
  readonly redis: { readonly host: string; readonly port: number };
  /** Every Redis server of the run: `scenario.nodes` of them, `redis` first. */
  readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /**
   * The masters of the scenario's Redis Cluster (its start-up nodes), or null off a cluster: the
   * libraries then get ioredis `Cluster` clients instead of connections to `redis`.
   */
  readonly cluster: ReadonlyArray<{ readonly host: string; readonly port: number }> | null;
}

/** One worker's part in a probe (engine-cpu, floor): no lock library, its own report. */
export interface ProbeSetup {
  readonly runId: string;
  /** 0-based index of this worker within the run; it decides the worker's role. */
  readonly worker: number;
  readonly probe: ProbeSpec;
  readonly redis: { readonly host: string; readonly port: number };
}

export type ParentMessage =
  | { readonly type: 'run'; readonly setup: RunSetup }
  | { readonly type: 'probe'; readonly setup: ProbeSetup }
  /** Start now; `startNs` is the run's time origin, `stopAtNs` the deadline of time-bound runs. */
  | { readonly type: 'go'; readonly startNs: string; readonly stopAtNs: string }
  /** A run that will not go ahead (another worker could not start it): close and stand by. */
  | { readonly type: 'cancel' }
  | { readonly type: 'exit' };

export interface StormTally {
  readonly attempts: number;
  readonly held: number;
  readonly cancelled: number;
  readonly timeouts: number;
  readonly errors: number;
}

/**
 * What an acquisition was, in the scenario's workload: `lock` (a mutex scenario), `permit` (a
 * semaphore's), `read` or `write` (a read-write lock's; also in a run that takes its mutex for both).
 */
export type Role = 'lock' | 'permit' | 'read' | 'write';

export interface WorkerReport {
  /** One entry per acquisition (critical section), parallel arrays. */
  readonly loop: number[];
  readonly keyIndex: number[];
  readonly role: Role[];
  /** ns from the run's start: right after the acquire resolved. */
  readonly enterNs: number[];
  /** ns from the run's start: right before release was called. */
  readonly exitNs: number[];
  /** From starting to acquire until holding, ms. */
  readonly waitMs: number[];
  /** Acquire start → release resolved, ms (only when the scenario records pairs). */
  readonly pairMs: number[];
  /** ns from the run's start when this worker's loops had all finished (before any settle pause). */
  readonly finishedNs: number;
  readonly loops: number;
  readonly timeouts: number;
  readonly errors: number;
  readonly errorSamples: string[];
  readonly roundTrips: number;
  /** The longest GC pause that began after the warm-up cut (ms; null where the scenario has no cut). */
  readonly gcPauseMaxMs: number | null;
  /** Full (major) collections that began after the warm-up cut (null where the scenario has no cut). */
  readonly gcMajorPauses: number | null;
  readonly storm?: StormTally;
  /** The Redis keys of the scenario's locks, as this library writes them. */
  readonly storeKeys: string[];
}

/** CPU and wall time of one measured round of one method (engine-cpu). */
export interface EngineRound {
  readonly method: EngineMethod;
  readonly pairs: number;
  /** `process.cpuUsage()` delta, user + system, µs. */
  readonly cpuUs: number;
  /** Wall time, µs. */
  readonly wallUs: number;
}

/** `acquire`: firstValueFrom(locker.acquire(k)) + lease.release(); `withLock`: of(1).pipe(locker.withLock(k)); `mutex`: a promise mutex. */
export type EngineMethod = 'acquire' | 'withLock' | 'mutex' | 'store';

export type ProbeReport =
  | { readonly kind: 'engine-cpu'; readonly rounds: EngineRound[]; readonly warmupPairs: number }
  | {
      readonly kind: 'floor';
      /** What this worker did: `ping` (worker 0, first half), `hop` (workers 0 and 1, second half), or stayed idle. */
      readonly roles: string[];
      /** PING round trips, ms (worker 0). */
      readonly pingMs: number[];
      /** PUBLISH call → message callback in this worker, ms (workers 0 and 1). */
      readonly hopMs: number[];
      /** The same, in the third part: the hop to this worker right after the sender's turn of work, ms (every worker). */
      readonly turnHopMs: number[];
      /** Third part: from the end of this worker's turn to the start of its next, after the part's cut, ms. */
      readonly turnGapsMs?: number[];
      /** Fourth part: the waits of this worker's loops between their holds, after the part's cut, ms; and its holds in all. */
      readonly holdWaitsMs?: number[];
      readonly holds?: number;
    };

export type WorkerMessage =
  | { readonly type: 'started'; readonly pid: number }
  | { readonly type: 'ready' }
  | { readonly type: 'skipped'; readonly reason: string }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'cancelled' }
  | ({ readonly type: 'done' } & WorkerReport)
  | { readonly type: 'probed'; readonly report: ProbeReport };
