/**
 * The life of one hold, as its holder sees it — `held` → `released` or `lost`, the one place that
 * moves it — and how a loss is told: first to the engine's one listener (whileHeld's, cheaper than
 * a subscription), then to `lost$` subscribers, each in its own reentrancy frames. A release runs
 * at most once and never rejects; what it gives back is the subclass's (a store lease's local
 * holder, a reentrant hold, a set of leases).
 */
import { AsyncSubject, type Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import { toldWhereSubscribed } from '../reentrancy/frames.js';

type State = 'held' | 'released' | 'lost';

export abstract class HoldLifecycle {
  private state: State = 'held';
  private releasing: Promise<boolean> | undefined;
  private lostSubject: AsyncSubject<LockLostError> | undefined;
  private lostError: LockLostError | undefined;
  private lossListener: ((error: LockLostError) => void) | undefined;

  /** Gives the hold back (called once, by {@link HoldLifecycle.release}); never rejects. */
  protected abstract giveBack(): Promise<boolean>;

  /** Brings the state up to date before it is read (a hold that can be lost without being told). */
  protected catchUp(): void {}

  /** Not released nor lost (the subclass adds what else makes it held). */
  protected get holding(): boolean {
    return this.state === 'held';
  }

  get released(): boolean {
    return this.releasing !== undefined;
  }

  /** The loss, once the hold is lost. */
  get lostWith(): LockLostError | undefined {
    return this.lostError;
  }

  get lost$(): Observable<LockLostError> {
    this.catchUp();
    // (each subscriber hears of the loss in its own reentrancy frames, not the lease timer's)
    return toldWhereSubscribed((this.lostSubject ??= this.newLostSubject()).asObservable());
  }

  /**
   * Sets the one engine-side listener that hears of a loss (called at once if the hold is lost
   * already), before any `lost$` subscriber. Released holds never call it.
   */
  watchLoss(listener: (error: LockLostError) => void): void {
    this.catchUp();
    if (this.state === 'lost') listener(this.lostError!);
    else if (this.state === 'held') this.lossListener = listener;
  }

  /** Drops the listener set with {@link HoldLifecycle.watchLoss}. */
  unwatchLoss(): void {
    this.lossListener = undefined;
  }

  release(): Promise<boolean> {
    if (this.releasing !== undefined) return this.releasing;
    this.catchUp();
    const wasHeld = this.state === 'held';
    if (wasHeld) this.state = 'released';
    this.lossListener = undefined;
    // The release is under way before anyone hears of it: a lost$ subscriber that calls release()
    // again gets this same promise.
    const releasing = (this.releasing = this.giveBack());
    if (wasHeld) this.lostSubject?.complete();
    return releasing;
  }

  /**
   * The hold is lost (once; nothing after a release or an earlier loss). `report` runs once it is
   * lost and before anyone is told: an `events$` handler that releases the lease or ends its stream
   * then finds it lost, not held, and `lost$` subscribers still hear of the loss.
   */
  protected markLost(error: LockLostError, report?: () => void): void {
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
