/**
 * Long waits made visible: an acquisition that has waited `longWait` ms (and again every
 * `longWait` ms after) is reported on `events$` as a `long-wait` event, with a fresh look at the
 * store — who holds the key, for how much longer, how many wait, and how long that one read took
 * — so an operator can tell "waiting behind a holder that has had the lock for a while" from "the
 * store is slow" (see {@link LongWaitEvent}).
 *
 * Costs nothing unless someone listens to `events$` when the acquisition starts. Then each
 * acquisition is kept in a map while it waits, and one sweep timer (running only while the map is
 * not empty, so none outlives the waits) finds those that are due; waiters of one key due in the
 * same sweep share one read.
 */
import type { Subscription } from 'rxjs';
import type { LockStoreError } from '../../errors/errors.js';
import { inspectorOf, type LockInfo } from '../../store/capabilities.js';
import { sharedInspectorOf, type SharedLockInfo } from '../../store/SharedLockStore.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { Clock } from '../timing/Clock.js';
import type { EventReporter } from './EventReporter.js';
import type { LongWaitEvent } from './events.js';

/** The key a waiter waits for, as its gate knows it. */
export interface WaitedKey {
  readonly key: string;
  readonly storeKey: string;
  /** The gate's state: `held` or `passing` means one of this locker's own acquisitions has it. */
  readonly stateName: string;
  /**
   * A shared lock's wait (semaphore, read-write lock): its limit and what the waiter asks for. The
   * key is then read with `inspectShared` and reported as the event's `permits`.
   */
  readonly shared?: { readonly limit: number; readonly weight: number };
}

/** A waiter, as far as its long wait is concerned. */
export interface WatchedWaiter {
  /** On the locker's wait clock. */
  readonly startedAt: number;
  readonly attempts: number;
  readonly done: boolean;
}

/** What a gate tells the monitor: a waiter joined, or left its line. */
export interface LongWaitWatch {
  watch(gate: WaitedKey, waiter: WatchedWaiter): void;
  forget(waiter: WatchedWaiter): void;
}

/** A watched waiter's progress. */
interface Mark {
  readonly gate: WaitedKey;
  /** Waited time (ms) at which it is reported next. */
  dueAt: number;
  /** The holder token its last report saw, and when it first saw it (wait clock). */
  holder?: { readonly token: string; readonly since: number };
}

/** What one read of a waited key found: a mutex's holder, or a shared lock (`null`: free). */
interface Look {
  readonly info?: LockInfo | null;
  readonly shared?: SharedLockInfo | null;
}

/** The longest pause between two sweeps, in ms: a report comes at most this late. */
const MAX_SWEEP_MS = 1_000;

export class LongWaitMonitor implements LongWaitWatch {
  private readonly marks = new Map<WatchedWaiter, Mark>();
  private sweep: Subscription | undefined;
  private readonly sweepMs: number;

  constructor(
    private readonly access: StoreAccess,
    private readonly clock: Clock,
    private readonly reporter: EventReporter,
    /** `longWait` (ms), or Infinity for never. */
    private readonly longWait: number,
  ) {
    this.sweepMs = Math.max(1, Math.min(MAX_SWEEP_MS, Math.floor(longWait / 4)));
  }

  watch(gate: WaitedKey, waiter: WatchedWaiter): void {
    if (this.longWait === Infinity || !this.reporter.observed) return;
    this.marks.set(waiter, { gate, dueAt: this.longWait });
    this.sweep ??= this.clock.timers.schedule(() => this.sweepNow(), this.sweepMs);
  }

  forget(waiter: WatchedWaiter): void {
    if (this.marks.size === 0 || !this.marks.delete(waiter) || this.marks.size !== 0) return;
    // Nobody left to watch: no timer outlives the waits (it would keep the process alive).
    this.sweep?.unsubscribe();
    this.sweep = undefined;
  }

  /** Stops the sweep (the locker closed). */
  stop(): void {
    this.marks.clear();
    this.sweep?.unsubscribe();
    this.sweep = undefined;
  }

  private sweepNow(): void {
    this.sweep = undefined;
    const now = this.clock.now();
    const due = new Map<WaitedKey, WatchedWaiter[]>();
    for (const [waiter, mark] of this.marks) {
      if (waiter.done) {
        this.marks.delete(waiter);
        continue;
      }
      if (now - waiter.startedAt < mark.dueAt) continue;
      // The next report comes a whole `longWait` later, however late this sweep ran.
      mark.dueAt = Math.floor((now - waiter.startedAt) / this.longWait + 1) * this.longWait;
      const waiters = due.get(mark.gate);
      if (waiters === undefined) due.set(mark.gate, [waiter]);
      else waiters.push(waiter);
    }
    for (const [gate, waiters] of due) this.look(gate, waiters);
    if (this.marks.size !== 0) this.sweep = this.clock.timers.schedule(() => this.sweepNow(), this.sweepMs);
  }

  /** One read of the key for the waiters of `gate` that are due, then a report for each still waiting. */
  private look(gate: WaitedKey, waiters: readonly WatchedWaiter[]): void {
    const heldHere = gate.stateName === 'held' || gate.stateName === 'passing';
    const read = this.readerOf(gate);
    if (read === undefined) {
      for (const waiter of waiters) this.report(gate, waiter, heldHere, {});
      return;
    }
    const sentAt = performance.now();
    this.access.call('inspect', gate.key, read, {
      value: (look) => {
        const storeReadMs = performance.now() - sentAt;
        for (const waiter of waiters) this.report(gate, waiter, heldHere, { ...look, storeReadMs });
      },
      error: (error) => {
        const storeReadMs = performance.now() - sentAt;
        for (const waiter of waiters) this.report(gate, waiter, heldHere, { error, storeReadMs });
      },
    });
  }

  /**
   * How a report reads `gate`'s key: its holder (`inspect`), or a shared lock's permits
   * (`inspectShared`); `undefined` when the store cannot say.
   */
  private readerOf(gate: WaitedKey): (() => Promise<Look>) | undefined {
    const store = this.access.store;
    if (gate.shared !== undefined) {
      const shared = sharedInspectorOf(store);
      return shared && (() => shared.inspectShared(gate.storeKey).then((info): Look => ({ shared: info })));
    }
    const inspector = inspectorOf(store);
    return inspector && (() => inspector.inspect(gate.storeKey).then((info): Look => ({ info })));
  }

  private report(gate: WaitedKey, waiter: WatchedWaiter, heldHere: boolean, look: Look & { error?: LockStoreError; storeReadMs?: number }): void {
    const mark = this.marks.get(waiter);
    // Granted, failed or gone while the store answered: its own event tells how the wait ended.
    if (mark === undefined || waiter.done) return;
    const now = this.clock.now();
    let holder: LongWaitEvent['holder'];
    if (look.info === null) {
      holder = null;
      mark.holder = undefined;
    } else if (look.info !== undefined) {
      const { token, ttl, waiting, fence } = look.info;
      if (mark.holder?.token !== token) mark.holder = { token, since: now };
      holder = { token, ttlMs: ttl, waiting, ...(fence === undefined ? {} : { fence }), seenForMs: now - mark.holder.since };
    }
    this.reporter.longWait({
      type: 'long-wait',
      key: gate.key,
      waitedMs: now - waiter.startedAt,
      attempts: waiter.attempts,
      heldHere,
      ...(holder === undefined ? {} : { holder }),
      ...(look.shared === undefined || gate.shared === undefined ? {} : { permits: permitsOf(look.shared, gate.shared) }),
      ...(look.storeReadMs === undefined ? {} : { storeReadMs: look.storeReadMs }),
      ...(look.error === undefined ? {} : { error: look.error }),
    });
  }
}

/** A shared lock's read as a long-wait report tells it (`null`: neither holder nor waiter). */
function permitsOf(info: SharedLockInfo | null, asked: { readonly limit: number; readonly weight: number }): NonNullable<LongWaitEvent['permits']> {
  return { used: info?.used ?? 0, limit: asked.limit, weight: asked.weight, holders: info?.holders.length ?? 0, waiting: info?.waiting ?? 0 };
}
