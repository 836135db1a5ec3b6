/**
 * The clock of a locker's held leases: when each must be renewed and when each stops being valid.
 * One binary heap ordered by due time and one timer armed for its head serve every lease, so
 * holding a lease costs no timer of its own (a timer per lease would cost more than the rest of
 * the engine on the acquire + release path), and renewals that fall due close together are
 * handed over as one batch, to share a round trip.
 *
 * A lease has at most one live entry; rescheduling or cancelling leaves the old entry in the heap
 * as stale (it is skipped when it surfaces), and the heap is rebuilt without stale entries when
 * they outnumber the live ones, so memory stays bounded by the leases held. When the last live
 * entry is cancelled the heap is emptied at once: acquisitions one after the other (one lease at a
 * time) otherwise left a thousand stale entries per rebuild, which lived long enough to be
 * promoted out of the young generation, and the old-generation collections that followed cost a
 * sixth of the engine's CPU per acquire + release pair. A stale entry lets go of its lease at
 * once: a released lease (its session, gate and subscribers) must not live on in the heap until
 * the rebuild — at tens of thousands of acquisitions a second, a thousand of them survived each
 * young-generation collection and made garbage collection most of the engine's CPU. The timer is
 * unref'd: it never keeps the process alive by itself, and it is left armed when the heap empties
 * (it fires once and finds nothing) rather than being cleared and re-created on every lease.
 */
import { Heap } from 'heap-js';

/** What a scheduled entry is for. */
export type DueKind = 'renew' | 'deadline';

/** What the clock needs from what it schedules (a store lease). */
export interface Scheduled {
  /** The lease's live entry, maintained by {@link LeaseTimers}. */
  timerEntry: TimerEntry | undefined;
  /** The entry came due: renew (push onto `renewals`), or check the deadline. */
  due(kind: DueKind, now: number, renewals: Scheduled[]): void;
}

export interface TimerEntry {
  /** The lease, while this is its live entry; `undefined` once the entry is stale. */
  lease: Scheduled | undefined;
  readonly kind: DueKind;
  readonly dueAt: number;
  /** How early the entry may be taken, to join a batch (renewals only). */
  readonly slack: number;
}

/** Stale entries tolerated before a rebuild is even considered. */
const MIN_STALE_FOR_REBUILD = 1024;

export class LeaseTimers {
  private readonly heap = new Heap<TimerEntry>((a, b) => a.dueAt - b.dueAt);
  private stale = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor = Infinity;

  /** @param renewalsDue receives the leases whose renewal came due together. */
  constructor(private readonly renewalsDue: (leases: Scheduled[]) => void) {}

  /** Replaces `lease`'s entry by one due at `dueAt` (`performance.now()` time). */
  schedule(lease: Scheduled, kind: DueKind, dueAt: number, slack = 0): void {
    if (lease.timerEntry !== undefined) this.retire(lease.timerEntry);
    const entry: TimerEntry = { lease, kind, dueAt, slack };
    lease.timerEntry = entry;
    this.heap.add(entry);
    if (dueAt < this.armedFor) this.arm(dueAt);
    this.compact();
  }

  /** Stops the timer for good (the locker was closed); entries stay, and nothing fires any more. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = -Infinity;
  }

  /** Drops `lease`'s entry. */
  cancel(lease: Scheduled): void {
    if (lease.timerEntry === undefined) return;
    this.retire(lease.timerEntry);
    lease.timerEntry = undefined;
    if (this.stale === this.heap.size()) {
      // Nothing live is left (a lease given back while no other is held, the common case): empty
      // the heap now rather than carry stale entries to the next rebuild. Popping a heap's one
      // entry allocates nothing.
      if (this.stale === 1) this.heap.pop();
      else this.heap.clear();
      this.stale = 0;
    } else this.compact();
  }

  /** Makes `entry` stale: it stays in the heap until it surfaces or a rebuild, holding nothing. */
  private retire(entry: TimerEntry): void {
    entry.lease = undefined;
    this.stale++;
  }

  /** Entries in the heap, live and stale (for tests). */
  get size(): number {
    return this.heap.size();
  }

  private arm(dueAt: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = dueAt;
    this.timer = setTimeout(this.fire, Math.max(0, dueAt - performance.now()));
    this.timer.unref?.();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    const renewals: Scheduled[] = [];
    let head: TimerEntry | undefined;
    while ((head = this.heap.peek()) !== undefined) {
      const lease = head.lease;
      if (lease === undefined) {
        this.heap.pop();
        this.stale--;
        continue;
      }
      if (head.dueAt > now + head.slack) break;
      this.heap.pop();
      head.lease = undefined;
      lease.timerEntry = undefined;
      lease.due(head.kind, now, renewals);
    }
    // `due` may have scheduled entries (and armed the timer) already.
    const next = this.heap.peek();
    if (next !== undefined && next.dueAt < this.armedFor) this.arm(next.dueAt);
    if (renewals.length > 0) this.renewalsDue(renewals);
  };

  private compact(): void {
    if (this.stale < MIN_STALE_FOR_REBUILD || this.stale * 2 < this.heap.size()) return;
    this.heap.init(this.heap.toArray().filter((entry) => entry.lease !== undefined));
    this.stale = 0;
  }
}
