/**
 * What the work run under a lock (`withLock`, `using`) needs of its lease: the public
 * {@link Lease}, plus the engine's one loss listener ({@link GuardedLease}). A lease taken from the
 * store ({@link HeldLease}) and a hold on the lease of an enclosing stream (reentrancy/SharedHold)
 * both have it.
 */
import type { GuardedLease } from './GuardedLease.js';
import type { Lease } from './Lease.js';

export interface WorkLease extends Lease, GuardedLease {}
