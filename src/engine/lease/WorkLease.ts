/**
 * What the work run under a lock (`withLock`, `using`) needs of its lease: the public
 * {@link Lease}, plus the engine's one loss listener. A lease taken from the store
 * ({@link HeldLease}) and a hold on the lease of an enclosing stream (reentrancy/SharedHold) both
 * have it.
 */
import type { LockLostError } from '../../errors/errors.js';
import type { Lease } from './Lease.js';

export interface WorkLease extends Lease {
  /** Sets the one engine-side listener for a loss (called at once if the lease is lost already). */
  watchLoss(listener: (error: LockLostError) => void): void;
  /** Drops that listener. */
  unwatchLoss(): void;
  /** The loss, once the lease is lost. */
  readonly lostWith: LockLostError | undefined;
}
