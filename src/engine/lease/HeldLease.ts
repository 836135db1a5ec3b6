/**
 * The engine's side of a {@link Lease}: its state (held → released, or held → lost), its
 * validity on the monotonic clock, its renewal schedule, and its release, which runs at most
 * once and never rejects.
 */
import { AsyncSubject, type Observable } from 'rxjs';
import { LockLostError, type LockLostReason, type LockStoreError } from '../../errors.js';
import { checkExtendTtl } from '../../options/validate.js';
import type { ExtendOutcome } from '../../store/LockStore.js';
import type { Lease } from './Lease.js';
import type { DueKind, TimedLease, TimerEntry } from './LeaseTimers.js';
import { leaseValidity, renewIntervalFor } from './validity.js';

/** What a lease needs from its engine. */
export interface LeaseOwner {
  releaseLease(lease: HeldLease): Promise<boolean>;
  /** Extends one lease now (manual `extend`); the outcome goes back to the lease. */
  extendLease(lease: HeldLease, ttl: number): Promise<ExtendOutcome>;
  schedule(lease: HeldLease, kind: DueKind, dueAt: number, slack?: number): void;
  unschedule(lease: HeldLease): void;
  reportRenewed(lease: HeldLease): void;
  reportRenewFailed(lease: HeldLease, error: LockStoreError): void;
  reportLost(lease: HeldLease, error: LockLostError): void;
}

type State = 'held' | 'released' | 'lost';

export class HeldLease implements Lease, TimedLease {
  timerEntry: TimerEntry | undefined = undefined;
  private state: State = 'held';
  private releasing: Promise<boolean> | undefined;
  private lostSubject: AsyncSubject<LockLostError> | undefined;
  private lostError: LockLostError | undefined;
  /** The last renewal failed (reason for a deadline that passes). */
  private lastRenewError: LockStoreError | undefined;
  /** A renewal was sent and not answered yet. */
  private renewPending = false;
  private currentTtl: number;
  private until: number;

  constructor(
    private readonly owner: LeaseOwner,
    readonly key: string,
    readonly storeKey: string,
    readonly token: string,
    readonly fence: number,
    ttl: number,
    readonly acquiredAt: number,
    /** `false` for no renewal, else the explicit interval (or undefined for ttl / 3). */
    private readonly renew: false | { readonly interval: number | undefined },
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

  get held(): boolean {
    return this.state === 'held' && performance.now() < this.until;
  }

  get released(): boolean {
    return this.releasing !== undefined;
  }

  get lost$(): Observable<LockLostError> {
    return (this.lostSubject ??= this.newLostSubject()).asObservable();
  }

  /** The loss, once the lease is lost. */
  get lostWith(): LockLostError | undefined {
    return this.lostError;
  }

  /** Starts the clock: the first renewal, or the deadline. Loses the lease if already invalid. */
  start(): void {
    this.scheduleNext(performance.now());
  }

  release(): Promise<boolean> {
    if (this.releasing !== undefined) return this.releasing;
    if (this.state === 'held') {
      this.state = 'released';
      this.owner.unschedule(this);
      this.lostSubject?.complete();
    }
    return (this.releasing = this.owner.releaseLease(this));
  }

  async extend(ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? this.currentTtl : checkExtendTtl(ttl);
    if (!this.checkValid(performance.now())) return false;
    const sentAt = performance.now();
    const outcome = await this.owner.extendLease(this, newTtl);
    return this.extended(outcome, sentAt, newTtl);
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

  private get interval(): number {
    return this.renew === false ? Infinity : renewIntervalFor(this.currentTtl, this.renew.interval);
  }

  /** Loses the lease if its validity has passed; says whether it is still held. */
  private checkValid(now: number): boolean {
    if (this.state !== 'held') return false;
    if (now < this.until) return true;
    // Unanswered or failed renewals mean the store could not be reached in time; otherwise
    // nothing renewed the lease (renew: false, or this process stalled past the validity).
    const unreachable = this.renewPending || this.lastRenewError !== undefined;
    this.lose(unreachable ? 'store-unreachable' : 'expired', this.lastRenewError);
    return false;
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
    const error = (this.lostError = new LockLostError(this.key, this.token, reason, cause));
    this.owner.reportLost(this, error);
    const subject = this.lostSubject;
    if (subject !== undefined) {
      subject.next(error);
      subject.complete();
    }
  }

  private newLostSubject(): AsyncSubject<LockLostError> {
    const subject = new AsyncSubject<LockLostError>();
    if (this.state === 'lost') {
      subject.next(this.lostError!);
      subject.complete();
    } else if (this.state === 'released') {
      subject.complete();
    }
    return subject;
  }
}
