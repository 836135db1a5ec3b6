/**
 * One acquisition waiting in its key's local gate: what it asked for, how long it has waited, how
 * often it found the lock held, and how it is told the outcome.
 */
import type { Subscription } from 'rxjs';
import type { AcquireSettings } from '../../options/validate.js';
import type { HeldLease } from '../lease/HeldLease.js';
import type { SessionRequest } from '../session/SessionOwner.js';
import type { InLine } from './WaiterLine.js';

export interface WaiterCallbacks {
  /** The lock is this waiter's. */
  granted(lease: HeldLease): void;
  /** The wait ended without the lock (LockTimeoutError, LockStoreError, LockerClosedError, or a retry policy's error). */
  failed(error: unknown): void;
}

export class Waiter implements SessionRequest, InLine<Waiter> {
  /** Times it found the lock held: store attempts made for it, and looks at the local line. */
  attempts = 0;
  /** Waits behind someone of this locker: its wait limit is its gate's to watch (./LocalDeadlines.ts). */
  waitsLocally = false;
  /** Its retry clock (a retry function only), while it waits behind someone of this locker. */
  local: Subscription | undefined;
  /** Set once it left the line (granted, failed or cancelled). */
  done = false;
  /** Its neighbours in its gate's line (see ./WaiterLine.ts). */
  ahead: Waiter | undefined = undefined;
  behind: Waiter | undefined = undefined;
  queued = false;

  constructor(
    readonly settings: AcquireSettings,
    /** On the locker's wait clock. */
    readonly startedAt: number,
    readonly callbacks: WaiterCallbacks,
  ) {}

  /** What is left of the wait at `now` (may be ≤ 0, or Infinity). */
  remaining(now: number): number {
    return this.settings.waitTimeout - (now - this.startedAt);
  }

  /** Its limit on the wait clock (Infinity: none). */
  get deadline(): number {
    return this.startedAt + this.settings.waitTimeout;
  }

  /** Stops waiting locally (its wait is now the store session's to watch, or over). */
  stopLocal(): void {
    this.waitsLocally = false;
    this.local?.unsubscribe();
    this.local = undefined;
  }
}
