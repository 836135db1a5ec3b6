/**
 * A local holder's {@link Lease}: its own fence, release and loss, over the {@link StoreLease}
 * that keeps the key in the store (which it may share, in turn, with the local holders before and
 * after it). States: `held` → `released` or `lost`; release runs at most once and never rejects.
 */
import { AsyncSubject, type Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import { checkExtendTtl } from '../../options/validate.js';
import type { HolderFacts } from '../events/EventReporter.js';
import { toldWhereSubscribed } from '../reentrancy/frames.js';
import type { Lease } from './Lease.js';
import type { StoreLease } from './StoreLease.js';

/** Where a holder gives its lease back (its key's gate). */
export interface HolderOwner {
  releaseHolder(holder: HeldLease): Promise<boolean>;
}

type State = 'held' | 'released' | 'lost';

export class HeldLease implements Lease, HolderFacts {
  private state: State = 'held';
  private releasing: Promise<boolean> | undefined;
  private lostSubject: AsyncSubject<LockLostError> | undefined;
  private lostError: LockLostError | undefined;
  /** The engine's own listener for a loss (whileHeld's), cheaper than a `lost$` subscription. */
  private lossListener: ((error: LockLostError) => void) | undefined;

  constructor(
    private readonly owner: HolderOwner,
    readonly store: StoreLease,
    readonly fence: number,
    readonly acquiredAt: number,
  ) {}

  get key(): string {
    return this.store.key;
  }

  get token(): string {
    return this.store.token;
  }

  get id(): string {
    return `${this.store.token}:${this.fence}`;
  }

  get ttl(): number {
    return this.store.ttl;
  }

  get validUntil(): number {
    return this.store.validUntil;
  }

  get held(): boolean {
    return this.state === 'held' && this.store.valid(performance.now());
  }

  get released(): boolean {
    return this.releasing !== undefined;
  }

  get lost$(): Observable<LockLostError> {
    // (each subscriber hears of the loss in its own reentrancy frames, not the lease timer's)
    return toldWhereSubscribed((this.lostSubject ??= this.newLostSubject()).asObservable());
  }

  /**
   * Sets the one engine-side listener that hears of a loss (called at once if the lease is lost
   * already), before any `lost$` subscriber. Released leases never call it.
   */
  watchLoss(listener: (error: LockLostError) => void): void {
    if (this.state === 'lost') listener(this.lostError!);
    else if (this.state === 'held') this.lossListener = listener;
  }

  /** Drops the listener set with {@link HeldLease.watchLoss}. */
  unwatchLoss(): void {
    this.lossListener = undefined;
  }

  /** The loss, once the lease is lost. */
  get lostWith(): LockLostError | undefined {
    return this.lostError;
  }

  release(): Promise<boolean> {
    if (this.releasing !== undefined) return this.releasing;
    const wasHeld = this.state === 'held';
    if (wasHeld) this.state = 'released';
    this.lossListener = undefined;
    // The release is under way before anyone hears of it: a lost$ subscriber that calls release()
    // again gets this same promise.
    const releasing = (this.releasing = this.owner.releaseHolder(this));
    if (wasHeld) this.lostSubject?.complete();
    return releasing;
  }

  async extend(ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? this.store.ttl : checkExtendTtl(ttl);
    if (this.state !== 'held') return false;
    return this.store.extend(newTtl);
  }

  /**
   * The store lease was lost while this holder had it. `report` (the `lost` event) runs once the
   * lease is lost and before anyone is told: an `events$` handler that releases the lease or ends
   * its stream then finds it lost, not held, and `lost$` subscribers still hear of the loss.
   */
  lose(error: LockLostError, report?: () => void): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.lostError = error;
    const listener = this.lossListener;
    this.lossListener = undefined;
    report?.();
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
