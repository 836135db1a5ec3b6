/**
 * Semaphore permits passed on in-process: when a holder of a semaphore's permits releases while
 * another acquisition of this locker waits for the same permits (same key, weight, limit, TTL and
 * renewal), the permits pass to it without the store — its store lease, renewal and all, with the
 * next fence of the grant's block — the way a mutex passes between local holders (the cohort
 * hand-off, ../gate/KeyGate.ts), bounded by the same policy (../handoff/HandoffPolicy.ts): each
 * local waiter that was there at the store grant gets a pass, further passes only for a short turn,
 * and never past the grant's fences. Then the permits go back to the store's line.
 *
 * This part keeps the turns (one per store grant of permits) and picks who is next; SharedLocks
 * moves the lease. Read-write locks do not pass: a read lock passed on would overtake a writer
 * waiting in the store's line, which read-write locks promise never happens.
 */
import { FenceBlock } from '../fencing/FenceBlock.js';
import type { HandoffPolicy, Turn } from '../handoff/HandoffPolicy.js';
import type { StoreLease } from '../lease/StoreLease.js';
import type { SharedWait } from './SharedWait.js';

/** What a waiting acquisition that may take passed permits offers. */
export interface PassableWait {
  readonly wait: SharedWait;
  /** Gives it the permits passed on: the lease, with `fence`. */
  take(storeLease: StoreLease, fence: number): void;
}

export class PermitPasses {
  /**
   * Passable waits grouped by what they ask for ({@link askOf}), each group in the order its waits
   * started (a Map keeps insertion order): who is next and how many wait alike are found without
   * going through the locker's other waits — a locker may wait for thousands of semaphores at once.
   */
  private readonly waits = new Map<string, Map<SharedWait, PassableWait>>();
  /** What each passable wait asks for (its group). */
  private readonly asks = new Map<SharedWait, string>();
  /** The turn of each store lease of passable permits this locker holds, with what they are. */
  private readonly turns = new Map<StoreLease, PermitTurn>();

  constructor(private readonly policy: HandoffPolicy) {}

  /** Entries kept: turns (one per store lease of passable permits held) and groups of waits. */
  get kept(): number {
    return this.turns.size + this.waits.size;
  }

  /** `wait` may take passed permits until it is forgotten. */
  add(passable: PassableWait): void {
    const ask = askOf(passable.wait);
    let group = this.waits.get(ask);
    if (group === undefined) this.waits.set(ask, (group = new Map()));
    group.set(passable.wait, passable);
    this.asks.set(passable.wait, ask);
  }

  /** `wait` is over (granted, failed or abandoned), or was never passable. */
  forget(wait: SharedWait): void {
    const ask = this.asks.get(wait);
    if (ask === undefined) return;
    this.asks.delete(wait);
    const group = this.waits.get(ask)!;
    group.delete(wait);
    if (group.size === 0) this.waits.delete(ask);
  }

  /** How many fences a store grant to `wait` should reserve (1 unless it is passable). */
  fencesFor(wait: SharedWait): number {
    if (!this.asks.has(wait)) return 1;
    return this.policy.fencesFor(this.othersLike(wait));
  }

  /**
   * A store grant of `fences` fences from `fence` to a passable wait (forgotten already): its
   * lease's turn starts now. `storeWaiting`: others in the store's line then, when the store says.
   * Unlike a mutex's, a semaphore's line holds a place per waiter, so the waits of this locker
   * that asked alike are in it too: the policy hears of the others only (the processes after the
   * key, which a turn's length is measured against), as a mutex's gate, whose line holds one place
   * per process, tells it.
   */
  startTurn(wait: SharedWait, storeLease: StoreLease, fence: number, fences: number, storeWaiting: number | undefined, now: number): void {
    const block = new FenceBlock(fence, Math.max(1, fences));
    const alike = this.othersLike(wait);
    const othersWaiting = storeWaiting === undefined ? undefined : Math.max(0, storeWaiting - alike);
    const turn = this.policy.startTurn(block, othersWaiting, alike, now);
    this.turns.set(storeLease, { turn, weight: wait.weight, capacity: wait.capacity });
  }

  /**
   * A holder of `storeLease` releases at `now`: may its permits pass on? Then the pass is decided
   * and its fence (taken from the turn's block) returned; the permits are the pass's until
   * {@link PermitPasses.nextFor} finds who takes them.
   */
  decide(storeLease: StoreLease, now: number): number | undefined {
    const permits = this.turns.get(storeLease);
    if (permits === undefined || !storeLease.valid(now)) return undefined;
    if (this.nextFor(storeLease) === undefined || !this.policy.mayPass(permits.turn, now)) return undefined;
    return this.policy.pass(permits.turn);
  }

  /** The wait that takes `storeLease`'s permits now: the oldest passable one that asked for the same. */
  nextFor(storeLease: StoreLease): PassableWait | undefined {
    const permits = this.turns.get(storeLease);
    if (permits === undefined) return undefined;
    const group = this.waits.get(ask(storeLease.storeKey, permits.weight, permits.capacity, storeLease.renewTtl, storeLease.renew));
    return group?.values().next().value;
  }

  /** `storeLease` goes back to the store (or was lost): its turn is over. */
  end(storeLease: StoreLease): void {
    this.turns.delete(storeLease);
  }

  /** Passable waits for what `wait` asks for, other than `wait`. */
  private othersLike(wait: SharedWait): number {
    // (a wait still passable has its ask recorded; one granted already is asked again)
    const group = this.waits.get(this.asks.get(wait) ?? askOf(wait));
    return group === undefined ? 0 : group.size - (group.has(wait) ? 1 : 0);
  }
}

/** A store grant of permits, as long as this locker holds it. */
interface PermitTurn {
  readonly turn: Turn;
  readonly weight: number;
  readonly capacity: number;
}

/**
 * What a wait asks for, as one string: permits serve the waits whose ask is their own — the same
 * key, weight and limit, and the same lease (TTL and renewal interval, or none).
 */
function askOf(wait: SharedWait): string {
  return ask(wait.storeKey, wait.weight, wait.capacity, wait.settings.ttl, wait.settings.renew);
}

function ask(storeKey: string, weight: number, capacity: number, ttl: number, renew: SharedWait['settings']['renew']): string {
  // (the key last: the fields before it have no spaces, so no two asks read the same)
  return `${weight} ${capacity} ${ttl} ${renew === false ? '-' : `r${renew.interval ?? ''}`} ${storeKey}`;
}
