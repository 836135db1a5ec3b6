/**
 * The lock as the store holds it for this process: one token, its TTL, its validity on the
 * monotonic clock and its renewal schedule. While it lasts it may serve several local holders in
 * turn (the cohort hand-off of ./../gate/KeyGate.ts); each of them sees it through a
 * {@link HeldLease}.
 */
import { LockLostError, type LockLostReason, type LockStoreError } from '../../errors.js';
import type { ExtendOutcome } from '../../store/LockStore.js';
import type { DueKind, TimedLease, TimerEntry } from './LeaseTimers.js';
import { leaseValidity, renewIntervalFor } from './validity.js';

/** What a store lease needs from its engine. */
export interface StoreLeaseOwner {
  /** Extends one lease now (manual `extend`). */
  extendLease(lease: StoreLease, ttl: number): Promise<ExtendOutcome>;
  schedule(lease: StoreLease, kind: DueKind, dueAt: number, slack?: number): void;
  unschedule(lease: StoreLease): void;
  reportRenewed(lease: StoreLease): void;
  reportRenewFailed(lease: StoreLease, error: LockStoreError): void;
}

/** Told when the store lease is lost (its current local holder loses it). */
export type LostListener = (error: LockLostError) => void;

type State = 'held' | 'ended' | 'lost';

export class StoreLease implements TimedLease {
  timerEntry: TimerEntry | undefined = undefined;
  private state: State = 'held';
  /** The last renewal failed (reason for a deadline that passes). */
  private lastRenewError: LockStoreError | undefined;
  /** A renewal was sent and not answered yet. */
  private renewPending = false;
  private currentTtl: number;
  private until: number;
  /** Who hears about a loss: the gate, which tells the current holder. */
  onLost: LostListener | undefined;

  constructor(
    private readonly owner: StoreLeaseOwner,
    readonly key: string,
    readonly storeKey: string,
    readonly token: string,
    /** The TTL the key has now (a granted key's claim TTL can differ from `wantedTtl`). */
    ttl: number,
    /** `performance.now()` when the call that set that TTL was sent (or a moment known to precede it). */
    readonly acquiredAt: number,
    /** The TTL renewals keep the key at. */
    private wantedTtl: number,
    /** `false` for no renewal, else the explicit interval (or undefined for ttl / 3). */
    readonly renew: false | { readonly interval: number | undefined },
  ) {
    this.currentTtl = ttl;
    this.until = acquiredAt + leaseValidity(ttl);
  }

  get ttl(): number {
    return this.currentTtl;
  }

  get validUntil(): number {
    return this.until;
  }

  get isHeld(): boolean {
    return this.state === 'held';
  }

  /** Held, and its validity has not passed at `now`. */
  valid(now: number): boolean {
    return this.state === 'held' && now < this.until;
  }

  /**
   * Starts the clock: the first renewal (at once when the key's TTL is not the wanted one), or
   * the deadline. Loses the lease if already invalid.
   */
  start(): void {
    const now = performance.now();
    if (this.currentTtl !== this.wantedTtl && this.renew === false) {
      // A granted key's TTL is not ours, and nothing would renew it: extend it once, now.
      if (this.checkValid(now)) this.owner.schedule(this, 'renew', now);
      return;
    }
    // A granted key's shorter TTL is renewed on its own schedule (a third of it): work that is done
    // before then never pays for the extension.
    this.scheduleNext(now);
  }

  /** Stops renewal for good (the lease was given back). */
  end(): void {
    if (this.state !== 'held') return;
    this.state = 'ended';
    this.owner.unschedule(this);
  }

  /** Manual extension: `true` when extended, `false` when no longer held (then lost, if found gone or taken). */
  async extend(ttl: number): Promise<boolean> {
    if (!this.checkValid(performance.now())) return false;
    const sentAt = performance.now();
    const outcome = await this.owner.extendLease(this, ttl);
    return this.extended(outcome, sentAt, ttl);
  }

  /** The TTL the next renewal asks for. */
  get renewTtl(): number {
    return this.wantedTtl;
  }

  /** The answer to an extend call (renewal or manual) sent at `sentAt` with `ttl`. */
  extended(outcome: ExtendOutcome, sentAt: number, ttl: number): boolean {
    if (this.state !== 'held') return false;
    const now = performance.now();
    if (!this.checkValid(now)) return false;
    this.renewPending = false;
    if (outcome === 'gone') return this.lose('expired'), false;
    if (outcome === 'taken') return this.lose('taken-over'), false;
    // Replies come in the order the calls were sent, so the last answered call sets the TTL.
    this.currentTtl = ttl;
    this.wantedTtl = ttl;
    this.until = sentAt + leaseValidity(ttl);
    this.lastRenewError = undefined;
    this.scheduleNext(now, sentAt);
    this.owner.reportRenewed(this);
    return true;
  }

  /** A renewal call failed: retry while there is time, else wait for the deadline. */
  renewFailed(error: LockStoreError): void {
    if (this.state !== 'held') return;
    const now = performance.now();
    if (!this.checkValid(now)) return;
    this.renewPending = false;
    this.lastRenewError = error;
    this.owner.reportRenewFailed(this, error);
    const retryAt = now + Math.max(1, Math.floor(this.interval / 3));
    if (retryAt < this.until) this.owner.schedule(this, 'renew', retryAt);
    else this.owner.schedule(this, 'deadline', this.until);
  }

  /** A renewal was sent: until it is answered, only the deadline is watched. */
  renewing(): void {
    this.renewPending = true;
    this.owner.schedule(this, 'deadline', this.until);
  }

  due(kind: DueKind, now: number, renewals: TimedLease[]): void {
    if (this.state !== 'held' || !this.checkValid(now)) return;
    if (kind === 'renew') renewals.push(this);
    else this.owner.schedule(this, 'deadline', this.until);
  }

  /** Loses the lease if its validity has passed at `now`; says whether it is still held. */
  checkValid(now: number): boolean {
    if (this.state !== 'held') return false;
    if (now < this.until) return true;
    // Unanswered or failed renewals mean the store could not be reached in time; otherwise
    // nothing renewed the lease (renew: false, or this process stalled past the validity).
    const unreachable = this.renewPending || this.lastRenewError !== undefined;
    this.lose(unreachable ? 'store-unreachable' : 'expired', this.lastRenewError);
    return false;
  }

  private get interval(): number {
    return this.renew === false ? Infinity : renewIntervalFor(Math.min(this.currentTtl, this.wantedTtl), this.renew.interval);
  }

  /** The next renewal (counted from `from`, when the validity started), or the deadline. */
  private scheduleNext(now: number, from = this.acquiredAt): void {
    if (!this.checkValid(now)) return;
    if (this.renew === false) {
      this.owner.schedule(this, 'deadline', this.until);
      return;
    }
    const interval = this.interval;
    this.owner.schedule(this, 'renew', Math.min(from + interval, this.until), interval / 4);
  }

  private lose(reason: LockLostReason, cause?: unknown): void {
    this.state = 'lost';
    this.owner.unschedule(this);
    const error = new LockLostError(this.key, this.token, reason, cause);
    this.onLost?.(error);
  }
}
