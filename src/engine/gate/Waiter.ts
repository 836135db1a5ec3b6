/**
 * One acquisition waiting in its key's local gate: what it asked for, how long it has waited, and
 * how it is told the outcome.
 */
import type { Subscription } from 'rxjs';
import type { AcquireSettings } from '../../options/validate.js';
import type { HeldLease } from '../lease/HeldLease.js';

export interface WaiterCallbacks {
  /** The lock is this waiter's. */
  granted(lease: HeldLease): void;
  /** The wait ended without the lock (LockTimeoutError, LockStoreError, or a retry policy's error). */
  failed(error: unknown): void;
}

export class Waiter {
  /** Store attempts made while this waiter was first in line. */
  attempts = 0;
  /** Its wait-limit timer, armed only while it waits behind someone. */
  timeout: Subscription | undefined;
  /** Set once it left the line (granted, failed or cancelled). */
  done = false;

  constructor(
    readonly settings: AcquireSettings,
    /** On the locker's clock. */
    readonly startedAt: number,
    readonly callbacks: WaiterCallbacks,
  ) {}

  /** What is left of the wait at `now` (may be ≤ 0, or Infinity). */
  remaining(now: number): number {
    return this.settings.waitTimeout - (now - this.startedAt);
  }
}
