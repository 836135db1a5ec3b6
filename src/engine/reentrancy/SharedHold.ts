/**
 * Reentrancy's hold count: one lease taken from the store, shared by the stream that took it and
 * the streams nested in its work that asked for the same key of the same locker. Each of them has
 * a {@link HoldLease}; the store lease is given back when the last hold is released — normally
 * the outermost stream's, since the streams nested in its work end before it does.
 *
 * - The outermost hold's `release()` resolves once the lock was really given back (so its
 *   stream's complete, passed on after it, still comes with the lock released), also when a hold
 *   that outlived it (a nested subscription not tied to the outer work) ends later.
 * - A nested hold's `release()` gives back nothing: it resolves at once, `true` if the lease was
 *   still held then.
 * - A loss of the store lease reaches every hold, the most recent first, so a nested stream
 *   errors with the `LockLostError` before the stream around it hears of it. From then on the
 *   holds left keep nobody waiting: the outermost stream's release does not wait for them (a
 *   joined `acquire()` lease that was lost may never be released by its caller).
 */
import type { LockLostError } from '../../errors/errors.js';
import type { HeldLease } from '../lease/HeldLease.js';
import { HoldLifecycle } from '../lease/HoldLifecycle.js';
import type { WorkLease } from '../lease/WorkLease.js';

/**
 * What a hold holds, so that only a compatible acquisition joins it: a mutex (`withLock`) is a lock
 * apart from the read-write lock of the same name, and a write covers a read but not the reverse.
 */
export type HoldMode = 'mutex' | 'read' | 'write';

export class SharedHold {
  private readonly holds = new Set<HoldLease>();
  private finalRelease: Promise<boolean> | undefined;
  private outermostRelease: ((released: boolean) => void) | undefined;

  constructor(
    /** The store lease, taken by the outermost stream. */
    readonly lease: HeldLease,
    /** The locker whose lease it is: a hold is joined only through the same locker. */
    readonly owner: object,
    /** The key as the store sees it (with the locker's prefix). */
    readonly storeKey: string,
    /** What the lease is: a mutex's, a read lock's or a write lock's. */
    readonly mode: HoldMode = 'mutex',
  ) {
    lease.watchLoss((error) => {
      for (const hold of [...this.holds].reverse()) hold.lose(error);
      // The outermost stream ended before the loss, waiting for holds that are now lost: done.
      if (this.outermostRelease !== undefined) void this.finish();
    });
  }

  /** Someone can still join: a hold is live and the lease is held. */
  get live(): boolean {
    return this.holds.size > 0 && this.finalRelease === undefined && this.lease.held;
  }

  /** How many holds are live (for tests and inspection). */
  get count(): number {
    return this.holds.size;
  }

  /** The outermost stream's hold. */
  outermost(): HoldLease {
    return this.add(true);
  }

  /** A nested stream's hold on the same lease. */
  join(): HoldLease {
    return this.add(false);
  }

  private add(outermost: boolean): HoldLease {
    const hold = new HoldLease(this, outermost, performance.now());
    this.holds.add(hold);
    // (lost before this hold was made: an events$ handler that closed the locker on 'acquired')
    const lost = this.lease.lostWith;
    if (lost !== undefined) hold.lose(lost);
    return hold;
  }

  /** Called once by each hold's `release()`. */
  drop(hold: HoldLease): Promise<boolean> {
    const held = this.lease.held;
    this.holds.delete(hold);
    // Once the lease is lost, the holds left keep nobody waiting: they were told of the loss, and
    // a lost lease needs no release (a joined acquire() lease may never be released by its caller).
    if (this.holds.size === 0 || (hold.outermost && this.lease.lostWith !== undefined)) return this.finish();
    if (!hold.outermost) return Promise.resolve(held);
    // The outermost stream ended with nested holds still running: its release is the lock's.
    return new Promise((resolve) => (this.outermostRelease = resolve));
  }

  /** Gives the store lease back (once) and tells the outermost stream if it waits for that. */
  private finish(): Promise<boolean> {
    const released = (this.finalRelease ??= this.lease.release());
    if (this.outermostRelease !== undefined) {
      const tell = this.outermostRelease;
      this.outermostRelease = undefined;
      void released.then(tell);
    }
    return released;
  }
}

/** One stream's hold on a {@link SharedHold}: the lease as that stream sees it. */
export class HoldLease extends HoldLifecycle implements WorkLease {
  constructor(
    private readonly shared: SharedHold,
    /** True for the hold of the stream that took the lease from the store. */
    readonly outermost: boolean,
    readonly acquiredAt: number,
  ) {
    super();
  }

  get key(): string {
    return this.shared.lease.key;
  }

  get token(): string {
    return this.shared.lease.token;
  }

  get id(): string {
    return this.shared.lease.id;
  }

  get fence(): number {
    return this.shared.lease.fence;
  }

  get ttl(): number {
    return this.shared.lease.ttl;
  }

  get validUntil(): number {
    return this.shared.lease.validUntil;
  }

  get held(): boolean {
    return this.holding && this.shared.lease.held;
  }

  /** Extends the shared lease (every hold's). */
  extend(ttl?: number): Promise<boolean> {
    if (!this.holding) return Promise.resolve(false);
    return this.shared.lease.extend(ttl);
  }

  /** The shared lease was lost. */
  lose(error: LockLostError): void {
    this.markLost(error);
  }

  /** Drops this hold (once; later calls return the first one's promise): see {@link SharedHold}. */
  protected giveBack(): Promise<boolean> {
    return this.shared.drop(this);
  }

  /**
   * The shared lease is lost but this hold has not heard yet (its loss is being reported: an
   * `events$` handler on 'lost' runs before the holds are told): it is lost, not released.
   */
  protected override catchUp(): void {
    const lost = this.shared.lease.lostWith;
    if (this.holding && lost !== undefined) this.markLost(lost);
  }
}
