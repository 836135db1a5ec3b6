/**
 * Who is measured, in which scenarios. To try a new rxjs-lock option, add a variant below: its
 * `options` are spread into `createLocker`, its `storeOptions` (if any) are `RedisLockStore`'s
 * second argument (see ./adapters/rxjsLock.ts). A variant whose options are rejected with
 * `LockOptionsError` (an option that does not exist yet) is skipped with a note instead of
 * failing the bench.
 */
import { CLUSTER_SCENARIOS, QUORUM_SCENARIOS, type LockScenarioName, type Primitive, type ScenarioName, type ScenarioSpec } from './scenarios.js';

export const LIBRARY_NAMES = ['rxjs-lock', 'redlock', 'redis-semaphore', 'baseline', 'store-only', 'script-floor', 'fenced-floor', 'quorum-floor'] as const;
export type LibraryName = (typeof LIBRARY_NAMES)[number];
export const PEERS: readonly LibraryName[] = ['redlock', 'redis-semaphore', 'baseline'];

/**
 * References, not peers (./adapters/references.ts, ./adapters/quorumFloor.ts): rxjs-lock's store
 * with no engine (on one server and on the uncontended quorums), one trivial script per call in
 * the store's shape (one server), one script per call doing what a fenced, fair lock's must when
 * nobody waits (one server), and the least a fenced quorum lock pays (one fencing script per
 * node per acquire, a compare-and-delete per node per release). They say how much of a gap to the
 * baseline (to redlock, on a quorum) is the engine, the store's protocol, the cost of any
 * script-based lock or of fencing; never the best peer.
 */
export const REFERENCES: ReadonlyArray<{ readonly library: LibraryName; readonly scenarios: readonly ScenarioName[] }> = [
  { library: 'store-only', scenarios: ['uncontended', 'many-keys', 'uncontended-3-nodes', 'uncontended-5-nodes'] },
  { library: 'script-floor', scenarios: ['uncontended', 'many-keys'] },
  { library: 'fenced-floor', scenarios: ['uncontended', 'many-keys'] },
  { library: 'quorum-floor', scenarios: ['uncontended-3-nodes', 'uncontended-5-nodes'] },
];

export interface BenchEntry {
  readonly library: LibraryName;
  /** `default` for every library's own settings; another name for an rxjs-lock option set. */
  readonly variant: string;
  /** rxjs-lock only: spread into `createLocker({ store, ...options })`. */
  readonly options: Readonly<Record<string, unknown>>;
  /**
   * rxjs-lock only: `new RedisLockStore(redis, storeOptions)` when set. Plain JSON (it travels to
   * the workers and into the results): `subscriber: 'duplicate'` stands for `redis.duplicate()`,
   * which the adapter makes (see ./adapters/rxjsLock.ts).
   */
  readonly storeOptions?: Readonly<Record<string, unknown>>;
  /** rxjs-lock only: what this run's acquisitions take instead of the scenario's primitive (see {@link primitiveOf}). */
  readonly primitive?: Primitive;
}

interface RxjsLockVariant {
  readonly variant: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly storeOptions?: Readonly<Record<string, unknown>>;
  /** Take this instead of the scenario's primitive, on the scenario's workload. */
  readonly primitive?: Primitive;
  /** Scenarios this variant runs in; every scenario when omitted. */
  readonly scenarios?: readonly ScenarioName[];
}

export const RXJS_LOCK_VARIANTS: readonly RxjsLockVariant[] = [
  { variant: 'default', options: {} },
  // The local hot-spot gate (per-key FIFO of one process's waiters) switched off: seed-000
  // compares the SET commands Redis sees with and without it.
  { variant: 'localGate-off', options: { localGate: false }, scenarios: ['seed-000'] },
  // On the Cluster: wake-ups over classic pub/sub. A subscriber given to the store (here a
  // duplicate of the Cluster client, as a user would pass one) keeps them on the store's broadcast
  // inbox (PUBLISH, which the cluster bus relays to every node) instead of sharded pub/sub.
  { variant: 'broadcast', options: {}, storeOptions: { subscriber: 'duplicate' }, scenarios: ['hot-key-cluster'] },
  // read-mostly's reads and writes, every one through the plain mutex (`acquire`): what the
  // read-write lock gains over it on the same workload.
  { variant: 'mutex', options: {}, primitive: { kind: 'mutex' }, scenarios: ['read-mostly'] },
  // More to compare, e.g. wake-up on release switched off (a store option):
  // { variant: 'wakeUp-off', options: {}, storeOptions: { wakeUp: false }, scenarios: ['hot-key-1ms', 'hot-key-0ms'] },
];

/**
 * The libraries of the quorum scenarios (several independent Redis servers): rxjs-lock (its
 * RedlockStore) and redlock, the one peer that locks over independent masters; and the two
 * quorum references, in the scenarios {@link REFERENCES} gives them (the uncontended ones).
 */
export const QUORUM_LIBRARIES: readonly LibraryName[] = ['rxjs-lock', 'redlock', 'store-only', 'quorum-floor'];
/**
 * The libraries of the cluster scenario: rxjs-lock and every peer, each given an ioredis `Cluster`
 * client where it takes a `Redis` (they all run on one with no change: redlock with the Cluster
 * as its only client, redis-semaphore and the baseline through the Cluster's commands). The
 * references are not run there.
 */
export const CLUSTER_LIBRARIES: readonly LibraryName[] = ['rxjs-lock', ...PEERS];
/**
 * The libraries of the scenarios on a shared lock: on the semaphore rxjs-lock and redis-semaphore
 * (its `Semaphore`; redlock and the baseline have none); on the read-write lock rxjs-lock alone
 * (no peer has one), against its own mutex (the `mutex` variant above).
 */
export const SHARED_LIBRARIES: Readonly<Partial<Record<LockScenarioName, readonly LibraryName[]>>> = {
  'semaphore-hot': ['rxjs-lock', 'redis-semaphore'],
  'read-mostly': ['rxjs-lock'],
};

/** What the acquisitions of `entry`'s run of `spec` take: the variant's primitive, else the scenario's. */
export function primitiveOf(spec: Pick<ScenarioSpec, 'primitive'>, entry: Pick<BenchEntry, 'primitive'>): Primitive {
  return entry.primitive ?? spec.primitive;
}

/** The runs of one scenario, in the order they run: rxjs-lock and its variants first, then the peers, then the references. */
export function entriesFor(scenario: ScenarioName, only: readonly string[] | undefined): BenchEntry[] {
  const quorum = QUORUM_SCENARIOS.includes(scenario as LockScenarioName);
  const cluster = CLUSTER_SCENARIOS.includes(scenario as LockScenarioName);
  const shared = SHARED_LIBRARIES[scenario as LockScenarioName];
  const wanted = (library: LibraryName) =>
    (only === undefined || only.includes(library)) &&
    (!quorum || QUORUM_LIBRARIES.includes(library)) &&
    (!cluster || CLUSTER_LIBRARIES.includes(library)) &&
    (shared === undefined || shared.includes(library));
  const entries: BenchEntry[] = [];
  if (wanted('rxjs-lock')) {
    for (const v of RXJS_LOCK_VARIANTS) {
      if (v.scenarios === undefined || v.scenarios.includes(scenario)) {
        entries.push({
          library: 'rxjs-lock',
          variant: v.variant,
          options: v.options,
          ...(v.storeOptions ? { storeOptions: v.storeOptions } : {}),
          ...(v.primitive ? { primitive: v.primitive } : {}),
        });
      }
    }
  }
  for (const peer of PEERS) if (wanted(peer)) entries.push({ library: peer, variant: 'default', options: {} });
  for (const ref of REFERENCES)
    if (wanted(ref.library) && ref.scenarios.includes(scenario)) entries.push({ library: ref.library, variant: 'default', options: {} });
  return entries;
}

/** How a run is named in tables and on the chart. */
export function entryLabel(e: { library: string; variant: string | null }): string {
  return e.variant === null || e.variant === 'default' ? e.library : `${e.library} (${e.variant})`;
}
