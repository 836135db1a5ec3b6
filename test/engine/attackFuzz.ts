/**
 * A random workload for the attack fuzz tests (attackFuzz.test.ts here and in test/redis): many
 * acquisitions of a few keys through several lockers, with random options, hold times and
 * cancellations, and hostile callers — `events$` and `lost$` handlers that synchronously release
 * leases, unsubscribe other acquisitions or close the locker, manual extends mid-hold.
 *
 * It checks, at each grant, that no other lease of the same key is `held` (mutual exclusion), and
 * that fences of one key handed out by the store strictly increase across holders; it records
 * every error that is not one an acquisition may end with.
 */
import { EMPTY, timer, type Subscription } from 'rxjs';
import { afterAll, beforeAll } from 'vitest';
import { isLockError, type AcquireResult, type ExtendOutcome, type Lease, type LockEvent, type Locker, type LockStore } from '../../src/index.js';

/** A small seeded PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FuzzLocker {
  readonly name: string;
  readonly locker: Locker;
}

export interface FuzzOptions {
  readonly keys: readonly string[];
  readonly durationMs: number;
  /** Most acquisitions alive at once. */
  readonly maxLive: number;
  readonly ttls: readonly number[];
  /** Chance that an events$ handler closes its locker on an event (then it is replaced, if `replace`). */
  readonly closeChance: number;
  /** Makes a new locker in place of a closed one. */
  readonly replace?: (closed: FuzzLocker) => FuzzLocker;
  /** Called every few ms while the workload runs (faults). */
  readonly tick?: (rng: () => number) => void;
}

export interface FuzzReport {
  grants: number;
  passes: number;
  /** Grants made while another lease of the key was `held`. */
  overlaps: string[];
  /** Fences that did not grow across holders of one key (store grants and passes alike). */
  fenceRegressions: string[];
  /** Errors an acquisition may not end with (anything but LockError kinds and the policy's own). */
  strangeErrors: string[];
  /** Errors thrown synchronously out of a subscribe/unsubscribe/release call. */
  thrown: string[];
  errorsByName: Record<string, number>;
  events: Record<string, number>;
  closes: number;
}

interface Live {
  sub: Subscription | undefined;
  done: boolean;
  lease?: Lease;
}

export async function runFuzz(lockers: FuzzLocker[], rng: () => number, options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = {
    grants: 0,
    passes: 0,
    overlaps: [],
    fenceRegressions: [],
    strangeErrors: [],
    thrown: [],
    errorsByName: {},
    events: {},
    closes: 0,
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  const live = new Set<Live>();
  const leasesOf = new Map<string, Set<Lease>>();
  const lastFence = new Map<string, { fence: number; id: string }>();
  const current = [...lockers];
  const eventSubs: Subscription[] = [];
  const policyError = new Error('policy says stop');

  const guard = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      report.thrown.push(`${what}: ${String(error)}`);
    }
  };

  const randomLive = (): Live | undefined => {
    const all = [...live];
    return all.length === 0 ? undefined : all[Math.floor(rng() * all.length)];
  };

  const hostile = (fz: FuzzLocker) => (event: LockEvent) => {
    report.events[event.type] = (report.events[event.type] ?? 0) + 1;
    const r = rng();
    if (r < 0.08) {
      const victim = randomLive();
      if (victim !== undefined) guard(`unsubscribe in ${event.type} handler`, () => victim.sub?.unsubscribe());
    } else if (r < 0.14) {
      const victim = randomLive();
      if (victim?.lease !== undefined) guard(`release in ${event.type} handler`, () => void victim.lease!.release());
    } else if (r < 0.14 + options.closeChance) {
      const index = current.indexOf(fz);
      if (index >= 0) {
        report.closes++;
        guard(`close in ${event.type} handler`, () => void fz.locker.close());
        if (options.replace !== undefined) {
          const next = options.replace(fz);
          current[index] = next;
          eventSubs.push(next.locker.events$.subscribe(hostile(next)));
        } else current.splice(index, 1);
      }
    }
  };
  for (const fz of current) eventSubs.push(fz.locker.events$.subscribe(hostile(fz)));

  const onGrant = (key: string, lease: Lease, entry: Live) => {
    report.grants++;
    entry.lease = lease;
    const set = leasesOf.get(key) ?? new Set<Lease>();
    leasesOf.set(key, set);
    for (const other of set) {
      if (other !== lease && other.held) {
        report.overlaps.push(
          `${key}: ${lease.id} granted while ${other.id} held (validUntil ${other.validUntil.toFixed(1)}, now ${performance.now().toFixed(1)})`,
        );
      }
      if (!other.held) set.delete(other);
    }
    set.add(lease);
    const last = lastFence.get(key);
    if (last !== undefined && lease.fence <= last.fence) report.fenceRegressions.push(`${key}: ${lease.id} after ${last.id}`);
    if (last === undefined || lease.fence > last.fence) lastFence.set(key, { fence: lease.fence, id: lease.id });
    const lostSub = lease.lost$.subscribe(() => {
      if (rng() < 0.5) guard('release in lost$', () => void lease.release());
    });
    void lostSub;
  };

  const onError = (error: unknown) => {
    const name = error instanceof Error ? error.name : typeof error;
    report.errorsByName[name] = (report.errorsByName[name] ?? 0) + 1;
    if (!isLockError(error) && error !== policyError) report.strangeErrors.push(String(error));
  };

  const spawn = () => {
    if (current.length === 0) return;
    const fz = pick(current);
    const key = pick(options.keys);
    const ttl = pick(options.ttls);
    const renew = rng() < 0.25 ? (false as const) : undefined;
    const waitTimeout = pick([0, 5, 30, 150, 400]);
    const retryKind = rng();
    const retry =
      retryKind < 0.6
        ? { minDelay: pick([0, 1, 3]), jitter: pick([0, 2, 8]) }
        : retryKind < 0.8
          ? (_attempt: number) => timer(Math.floor(rng() * 6))
          : retryKind < 0.9
            ? (attempt: number) => (attempt > 3 ? EMPTY : timer(2))
            : (attempt: number) => {
                if (attempt > 5) throw policyError;
                return timer(1);
              };
    const opts = { ttl, waitTimeout, retry, ...(renew === false ? { renew } : {}), onLost: rng() < 0.5 ? ('error' as const) : ('notify' as const) };
    const hold = Math.floor(rng() * (rng() < 0.1 ? ttl * 2 : 8));
    const cancelAfter = rng() < 0.3 ? Math.floor(rng() * 20) : undefined;
    const entry: Live = { sub: undefined, done: false };
    live.add(entry);
    const finish = () => {
      entry.done = true;
      live.delete(entry);
    };
    const mode = rng();
    guard('subscribe', () => {
      if (mode < 0.5) {
        entry.sub = fz.locker.acquire(key, opts).subscribe({
          next: (lease) => {
            onGrant(key, lease, entry);
            if (rng() < 0.2) {
              setTimeout(
                () => {
                  lease.extend(rng() < 0.5 ? undefined : pick(options.ttls)).catch((error: unknown) => onError(error));
                },
                Math.floor(rng() * hold),
              );
            }
            if (hold === 0 && rng() < 0.5) guard('sync release', () => void lease.release().then(finish));
            else setTimeout(() => void lease.release().then(finish), hold);
          },
          error: (error: unknown) => {
            onError(error);
            finish();
          },
        });
      } else {
        entry.sub = fz.locker
          .using(
            key,
            (lease) => {
              onGrant(key, lease, entry);
              return hold === 0 ? [1] : timer(hold);
            },
            opts,
          )
          .subscribe({
            error: (error: unknown) => {
              onError(error);
              finish();
            },
            complete: finish,
          });
      }
    });
    if (cancelAfter !== undefined) {
      if (cancelAfter === 0) guard('sync unsubscribe', () => entry.sub?.unsubscribe());
      else
        setTimeout(() => {
          guard('unsubscribe', () => entry.sub?.unsubscribe());
          if (entry.lease === undefined) finish();
        }, cancelAfter);
    }
  };

  const endAt = performance.now() + options.durationMs;
  while (performance.now() < endAt) {
    const burst = 1 + Math.floor(rng() * 3);
    for (let i = 0; i < burst && live.size < options.maxLive; i++) spawn();
    options.tick?.(rng);
    await new Promise((resolve) => setTimeout(resolve, Math.floor(rng() * 3)));
  }
  // Stop: every subscription still open is unsubscribed; leases from acquire() are released.
  for (const entry of [...live]) {
    guard('final unsubscribe', () => entry.sub?.unsubscribe());
    if (entry.lease !== undefined) void entry.lease.release();
  }
  for (const sub of eventSubs) sub.unsubscribe();
  return report;
}

/** The lockers still in use at the end (after replacements). */
export function countOf(report: FuzzReport): string {
  return `${report.grants} grants, events ${JSON.stringify(report.events)}, errors ${JSON.stringify(report.errorsByName)}, closes ${report.closes}`;
}

/**
 * Unhandled rejections and uncaught exceptions while the file's tests run (an illegal gate move
 * throws under RXJS_LOCK_STRICT=1 and would surface as one of these), as strings.
 */
export function watchProblems(): string[] {
  const problems: string[] = [];
  // (with the first frames of the stack: where the promise was made is what a fix needs)
  const describe = (reason: unknown) => (reason instanceof Error && reason.stack ? reason.stack.split('\n').slice(0, 8).join(' | ') : String(reason));
  const onUnhandled = (reason: unknown) => problems.push(`unhandledRejection: ${describe(reason)}`);
  const onUncaught = (error: unknown) => problems.push(`uncaughtException: ${String(error)}`);
  beforeAll(() => {
    process.on('unhandledRejection', onUnhandled);
    process.on('uncaughtException', onUncaught);
  });
  afterAll(() => {
    process.off('unhandledRejection', onUnhandled);
    process.off('uncaughtException', onUncaught);
  });
  return problems;
}

/** What a fuzz run found (the first 5 of each kind): {@link NO_FINDINGS} when every promise was kept. */
export function findingsOf(report: FuzzReport, problems: readonly string[]) {
  return {
    overlaps: report.overlaps.slice(0, 5),
    fenceRegressions: report.fenceRegressions.slice(0, 5),
    strangeErrors: report.strangeErrors.slice(0, 5),
    thrown: report.thrown.slice(0, 5),
    problems: problems.slice(0, 5),
  };
}

export const NO_FINDINGS = { overlaps: [], fenceRegressions: [], strangeErrors: [], thrown: [], problems: [] };

/** Keys the lockers' gates still track (none once they are closed and their calls settled). */
export function gatesLeft(lockers: readonly FuzzLocker[]): number {
  return lockers.map((fz) => (fz.locker as unknown as { liveKeys: number }).liveKeys).reduce((a, b) => a + b, 0);
}

/** Runs functions at given times, strictly in the order they were queued. */
class Fifo {
  private readonly queue: Array<{ at: number; run: () => void }> = [];
  private lastAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  push(at: number, run: () => void): void {
    this.lastAt = Math.max(this.lastAt, at);
    this.queue.push({ at: this.lastAt, run });
    this.arm();
  }

  private arm(): void {
    if (this.timer !== undefined || this.queue.length === 0) return;
    this.timer = setTimeout(this.pump, Math.max(0, this.queue[0]!.at - performance.now()));
  }

  private readonly pump = (): void => {
    this.timer = undefined;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0]!.at <= now) this.queue.shift()!.run();
    this.arm();
  };
}

/**
 * A store reached over a slow connection that keeps the order of calls and answers: each call
 * waits 0-2 ms on its way (with chance `stallChance`, `stall.min` + up to `stall.spread` ms more)
 * and 0-2 ms on its way back. The core calls go through it; a subclass sends the others.
 */
export class SlowLinkStore<S extends LockStore = LockStore> implements LockStore {
  private readonly out = new Fifo();
  private readonly back = new Fifo();
  constructor(
    readonly inner: S,
    private readonly rng: () => number,
    private readonly stallChance: number,
    private readonly stall: { readonly min: number; readonly spread: number },
  ) {}

  protected send<T>(op: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stall = this.rng() < this.stallChance ? this.stall.min + this.rng() * this.stall.spread : 0;
      this.out.push(performance.now() + this.rng() * 2 + stall, () => {
        op().then(
          (value) => this.back.push(performance.now() + this.rng() * 2, () => resolve(value)),
          (error: unknown) => this.back.push(performance.now(), () => reject(error)),
        );
      });
    });
  }

  tryAcquire(key: string, token: string, ttlMs: number, fences?: number): Promise<AcquireResult> {
    return this.send(() => this.inner.tryAcquire(key, token, ttlMs, fences));
  }
  release(key: string, token: string): Promise<boolean> {
    return this.send(() => this.inner.release(key, token));
  }
  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return this.send(() => this.inner.extend(key, token, ttlMs));
  }
}
