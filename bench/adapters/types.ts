/**
 * The one shape every measured library is driven through. Each adapter uses its library the way
 * that library's README shows, and translates only the wait limit and the lease length.
 */
import type { Cluster, Redis } from 'ioredis';

/** What a library is given to talk to Redis: a connection to one server, or a Cluster client (the same commands). */
export type RedisConnection = Redis | Cluster;

export interface Limits {
  /** Give up waiting for a held lock after this long (each library's own way of saying it). */
  readonly waitTimeoutMs: number;
  /** Lease length. */
  readonly ttlMs: number;
}

export interface Held {
  /** Gives the lock back; resolves once the library says it is done. Never rejects. */
  release(): Promise<void>;
}

/** Marks the holding part of a cancellable acquisition (cancel-storm). */
export interface Section {
  /** Call right when the lock is held. */
  enter(): void;
  /** Call when the holder stops relying on the lock (before the release is sent). */
  exit(): void;
}

/** How a cancellable acquisition ended. */
export type StormOutcome = 'held' | 'cancelled' | 'timeout' | 'error';

/** What one acquisition of a shared lock takes: a permit of a semaphore of `limit`, a read lock or the write lock. */
export type SharedTake = { readonly kind: 'permit'; readonly limit: number } | { readonly kind: 'read' } | { readonly kind: 'write' };

/** A library's semaphore and read-write lock (the scenarios semaphore-hot and read-mostly). */
export interface SharedLockAdapter {
  /** What it offers: a run that needs another take fails, naming it. */
  readonly offers: ReadonlyArray<SharedTake['kind']>;
  /** A key this library keeps in Redis while the shared lock named `name` has a holder (checked during the warm-up). */
  storeKey(name: string): string;
  /** Waits for the take; rejects with {@link AcquireTimeout} when the wait limit runs out. */
  acquire(name: string, take: SharedTake, limits: Limits): Promise<Held>;
}

export interface LockAdapter {
  /** Semaphores and read-write locks, where the library has them. */
  readonly shared?: SharedLockAdapter;
  /** The key this library writes in Redis for the lock name `name`. */
  storeKey(name: string): string;
  /** Waits for the lock; rejects with {@link AcquireTimeout} when the wait limit runs out. */
  acquire(name: string, limits: Limits): Promise<Held>;
  /**
   * Takes the lock and holds it until `signal` aborts, then lets go the library's own way;
   * cancelling while still waiting abandons the wait. Resolves when the caller may move on.
   */
  holdUntilAborted(name: string, limits: Limits, signal: AbortSignal, section: Section): Promise<StormOutcome>;
  /** Resolves once work the library left running in the background (abandoned acquisitions) has ended. */
  settle(): Promise<void>;
  /** Library clean-up beyond closing the connections (the worker quits those itself). */
  close(): Promise<void>;
}

export interface AdapterContext {
  /** How many independent Redis servers the scenario runs on (1, or 3 and 5 in the quorum scenarios). */
  readonly nodeCount: number;
  /**
   * One new connection to each of the scenario's Redis servers, the bench's own first, counted
   * and closed like {@link connect}'s.
   */
  connectNodes(): Promise<Redis[]>;
  /**
   * A new ioredis connection to the bench's Redis, connected, counted as the library's round
   * trips (the connection name tags it; `duplicate()` keeps the tag). Closed by the worker. In a
   * cluster scenario, a new ioredis `Cluster` client on the scenario's masters, ready, tagged and
   * closed alike (its node connections carry the tag; its subscribers carry it as a suffix).
   */
  connect(): Promise<RedisConnection>;
}

/** The library's wait limit ran out (each adapter maps its library's own timeout error to this). */
export class AcquireTimeout extends Error {
  override readonly name = 'AcquireTimeout';
}

/** Resolves when `signal` aborts (at once if it already has). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/**
 * The naive cancellable hold of a library whose acquire cannot be cancelled: race the acquisition
 * against `signal`; when the signal wins, walk away (the acquisition goes on in the background,
 * tracked by `background`, and nobody releases what it gets); when the lock wins, hold it until
 * the signal, then release. `isTimeout` tells the library's give-up error from a failure.
 */
export async function holdRacingAbort(
  acquiring: Promise<Held>,
  background: Background,
  signal: AbortSignal,
  section: Section,
  isTimeout: (error: unknown) => boolean,
): Promise<StormOutcome> {
  background.track(acquiring);
  const first = await Promise.race([
    acquiring.then(
      (held) => ({ held }),
      (error: unknown) => ({ error }),
    ),
    whenAborted(signal).then(() => null),
  ]);
  if (first === null) return 'cancelled';
  if ('error' in first) return isTimeout(first.error) ? 'timeout' : 'error';
  try {
    section.enter();
    await whenAborted(signal);
    section.exit();
  } finally {
    await first.held.release();
  }
  return 'held';
}

/**
 * The adapter around an `acquire` that cannot be cancelled (the baseline's and the references'):
 * its holdUntilAborted races the acquire against the abort, {@link holdRacingAbort}.
 */
export function adapterOf(acquire: (name: string, limits: Limits) => Promise<Held>, close: () => Promise<void>): LockAdapter {
  const background = new Background();
  return {
    storeKey: (name) => name,
    acquire,
    holdUntilAborted: (name, limits, signal, section) =>
      holdRacingAbort(acquire(name, limits), background, signal, section, (e) => e instanceof AcquireTimeout),
    settle: () => background.settle(),
    close,
  };
}

/** Keeps the promises of work left running in the background, so `settle()` can wait for them. */
export class Background {
  private readonly pending = new Set<Promise<unknown>>();

  track(work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
  }

  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
