/**
 * What the engine needs of whatever a stream holds to run work under it (see
 * ../acquisition/whileHeld.ts): one lease ({@link WorkLease}) or a set of them (../multikey). It
 * can be lost, given back once, and tells the engine's one listener of a loss.
 */
import type { Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';

export interface GuardedLease {
  /** Sets the one engine-side listener for a loss (called at once if it is lost already). */
  watchLoss(listener: (error: LockLostError) => void): void;
  /** Drops that listener. */
  unwatchLoss(): void;
  /** The loss, once it is lost. */
  readonly lostWith: LockLostError | undefined;
  /** Emits the loss and completes; completes without a value once released. Replays. */
  readonly lost$: Observable<LockLostError>;
  /** Gives back what is held, once; never rejects. */
  release(): Promise<boolean>;
}
