/**
 * A {@link LeaseSet} over the leases a multi-key acquisition took (leases from the store, or holds
 * on leases of an enclosing stream: see ../reentrancy). States: `held` → `released` or `lost`.
 * The first loss of any lease loses the set; release gives back every lease once and never
 * rejects.
 */
import { AsyncSubject, type Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import { checkExtendTtl } from '../../options/validate.js';
import type { GuardedLease } from '../lease/GuardedLease.js';
import type { Lease } from '../lease/Lease.js';
import type { WorkLease } from '../lease/WorkLease.js';
import { toldWhereSubscribed } from '../reentrancy/frames.js';
import type { LeaseSet } from './LeaseSet.js';

type State = 'held' | 'released' | 'lost';

export class HeldLeaseSet implements LeaseSet, GuardedLease {
  private state: State = 'held';
  private releasing: Promise<boolean> | undefined;
  private lostError: LockLostError | undefined;
  private lossListener: ((error: LockLostError) => void) | undefined;
  private lostSubject: AsyncSubject<LockLostError> | undefined;
  readonly keys: readonly string[];
  readonly leases: ReadonlyMap<string, Lease>;
  readonly fences: ReadonlyMap<string, number>;
  readonly acquiredAt = performance.now();

  /** `members`: one lease per key, in the order they were taken; the set watches their losses from now on. */
  constructor(private readonly members: readonly WorkLease[]) {
    this.keys = members.map((lease) => lease.key);
    this.leases = new Map(members.map((lease) => [lease.key, lease]));
    this.fences = new Map(members.map((lease) => [lease.key, lease.fence]));
    for (const lease of members) lease.watchLoss((error) => this.lose(error));
  }

  get validUntil(): number {
    let until = Infinity;
    for (const lease of this.members) until = Math.min(until, lease.validUntil);
    return until;
  }

  get held(): boolean {
    return this.state === 'held' && this.members.every((lease) => lease.held);
  }

  get released(): boolean {
    return this.releasing !== undefined;
  }

  get lostWith(): LockLostError | undefined {
    return this.lostError;
  }

  get lost$(): Observable<LockLostError> {
    // (each subscriber hears of the loss in its own reentrancy frames, not the lease timer's)
    return toldWhereSubscribed((this.lostSubject ??= this.newLostSubject()).asObservable());
  }

  watchLoss(listener: (error: LockLostError) => void): void {
    if (this.state === 'lost') listener(this.lostError!);
    else if (this.state === 'held') this.lossListener = listener;
  }

  unwatchLoss(): void {
    this.lossListener = undefined;
  }

  release(): Promise<boolean> {
    if (this.releasing !== undefined) return this.releasing;
    const wasHeld = this.state === 'held';
    if (wasHeld) this.state = 'released';
    this.lossListener = undefined;
    // The last key taken is given back first (each release never rejects: false when it failed).
    const releases = [...this.members].reverse().map((lease) => {
      lease.unwatchLoss();
      return lease.release();
    });
    const releasing = (this.releasing = Promise.all(releases).then((outcomes) => outcomes.every(Boolean)));
    if (wasHeld) this.lostSubject?.complete();
    return releasing;
  }

  async extend(ttl?: number): Promise<boolean> {
    if (ttl !== undefined) checkExtendTtl(ttl);
    if (this.state !== 'held') return false;
    const outcomes = await Promise.all(this.members.map((lease) => lease.extend(ttl)));
    return outcomes.every(Boolean);
  }

  /** A lease of the set was lost: the set is lost (once; later losses add nothing). */
  private lose(error: LockLostError): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.lostError = error;
    const listener = this.lossListener;
    this.lossListener = undefined;
    listener?.(error);
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
