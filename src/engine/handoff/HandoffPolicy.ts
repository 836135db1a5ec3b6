/**
 * When the lock may pass from one local holder to the next without the store (a cohort hand-off),
 * and how many fences a store grant reserves for that. The gate asks; the policy decides. A policy
 * only weighs fairness against store traffic: whether a pass is *safe* (the lease still valid, the
 * next waiter asking for the same lease) is the gate's check, whatever the policy says.
 */
import { FenceBlock, fencesToReserve } from '../fencing/FenceBlock.js';

/** One process's turn with a key: from a store grant until the lock goes back to the store. */
export interface Turn {
  /** The grant's fences: the first holder's and its successors'. */
  readonly fences: FenceBlock;
  /** `performance.now()` at the grant. */
  readonly grantedAt: number;
  /** Local hand-offs made in this turn so far. */
  readonly passes: number;
  /**
   * How many other processes were after the key at the grant, when the store says: in its line,
   * or (a store without one) asking and refused lately.
   */
  readonly storeWaiting: number | undefined;
}

export interface HandoffPolicy {
  /** How many fences a store grant should reserve, with `localWaiting` others of this process in line behind the one asking. */
  fencesFor(localWaiting: number): number;
  /**
   * A turn starts with a store grant of `fences`; `storeWaiting` other processes were in the
   * store's line then (when the store says), `localWaiting` local waiters behind the new holder.
   */
  startTurn(fences: FenceBlock, storeWaiting: number | undefined, localWaiting: number, now: number): Turn;
  /** May the lock pass to the next local waiter at `now`? (The block must also have a fence left.) */
  mayPass(turn: Turn, now: number): boolean;
  /** The lock passed: the successor's fence, or `undefined` when none is left (then it must not pass). */
  pass(turn: Turn): number | undefined;
}

/** Bounds of the cohort policy (the locker's `cohort` option). */
export interface CohortBounds {
  readonly maxPasses: number;
  readonly maxMs: number;
  readonly roundMs: number;
  readonly batchMs: number;
}

class CohortTurn implements Turn {
  passes = 0;
  constructor(
    readonly fences: FenceBlock,
    readonly grantedAt: number,
    readonly storeWaiting: number | undefined,
    /** How long passes may go on after everyone of the batch had one. */
    readonly turnMs: number,
    /** Local waiters that were in line at the grant: each gets a pass. */
    readonly batch: number,
  ) {}
}

/**
 * The default policy: every local waiter that was in line at the store grant gets the lock once
 * (so a process's waiters need one round of the store's line, not several), while the turn is
 * younger than `batchMs` (never less than `maxMs`); after them, passes go on for a turn of `maxMs`
 * since the grant, cut to `roundMs / (waiting + 1)` when the store says `waiting` other processes
 * are in its line (so the line goes round in about `roundMs`). Never more than `maxPasses` passes.
 *
 * Why the batch outlives `maxMs`: holds stretch when the machine is loaded (a 1 ms timer that
 * fires after 5–8 ms), and a batch cut at `maxMs` leaves its last waiters a whole further round of
 * the line to wait — in the bench's hot key (8 processes × 4 loops, 1 ms holds) the longest waits
 * were such waiters, at two rounds; `batchMs` bounds what one process's batch can cost the others.
 */
export class CohortPolicy implements HandoffPolicy {
  /** How long after the grant the batch may still be served: `batchMs`, at least `maxMs`. */
  private readonly batchMs: number;

  constructor(private readonly bounds: CohortBounds) {
    this.batchMs = Math.max(bounds.batchMs, bounds.maxMs);
  }

  fencesFor(localWaiting: number): number {
    return this.bounds.maxMs <= 0 ? 1 : fencesToReserve(localWaiting, this.bounds.maxPasses);
  }

  /** The turn after everyone of the batch had a pass. */
  turnMs(storeWaiting: number | undefined): number {
    const { maxMs, roundMs } = this.bounds;
    return storeWaiting === undefined || storeWaiting <= 0 ? maxMs : Math.min(maxMs, roundMs / (storeWaiting + 1));
  }

  startTurn(fences: FenceBlock, storeWaiting: number | undefined, localWaiting: number, now: number): Turn {
    return new CohortTurn(fences, now, storeWaiting, this.turnMs(storeWaiting), localWaiting);
  }

  mayPass(turn: Turn, now: number): boolean {
    const t = turn as CohortTurn;
    if (t.passes >= this.bounds.maxPasses || t.fences.left <= 0) return false;
    const elapsed = now - t.grantedAt;
    return t.passes < t.batch ? elapsed < this.batchMs : elapsed < t.turnMs;
  }

  pass(turn: Turn): number | undefined {
    const t = turn as CohortTurn;
    const fence = t.fences.take();
    if (fence !== undefined) t.passes++;
    return fence;
  }
}

/** Never pass: every acquisition goes through the store (`cohort: false`). */
export const NO_HANDOFF: HandoffPolicy = {
  fencesFor: () => 1,
  startTurn: (fences, storeWaiting, _localWaiting, now) => ({ fences, grantedAt: now, passes: 0, storeWaiting }),
  mayPass: () => false,
  pass: () => undefined,
};
