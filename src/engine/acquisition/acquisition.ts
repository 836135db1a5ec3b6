/**
 * One acquisition as an Observable. Cold: nothing happens before subscription, and each
 * subscription is a new waiter in its key's local gate (see ../gate), which emits the lease and
 * completes once the lock is this waiter's, or errors (`LockTimeoutError`, `LockStoreError`,
 * `LockerClosedError`). A subscription made inside the work of a `withLock`/`using` that holds the
 * same key (of the same locker) joins that lease instead (see ../reentrancy), unless
 * `reentrant: false`.
 *
 * Cancellation safety: unsubscribing takes the waiter out of line; if it was the last one, the
 * store session is abandoned, and a lock the store grants anyway is given back at once (the naive
 * `defer(acquire).pipe(switchMap(…finalize(release)))` leaks exactly there). A lease granted
 * while the subscriber is leaving (an `events$` handler unsubscribed it) is released at once.
 */
import { Observable } from 'rxjs';
import { LockerClosedError } from '../../errors/errors.js';
import type { AcquireSettings } from '../../options/validate.js';
import { Waiter } from '../gate/Waiter.js';
import type { WorkLease } from '../lease/WorkLease.js';
import { subscriberOutcome } from './subscriberOutcome.js';

/** Where an acquisition waits: its key's gate. */
export interface WaitingLine {
  enqueue(waiter: Waiter): void;
  leave(waiter: Waiter): void;
}

/** What an acquisition needs of its locker. */
export interface AcquisitionContext {
  /** True once the locker was closed: new acquisitions are refused. */
  readonly closed: boolean;
  /** The wait clock. */
  now(): number;
  lineFor(key: string, storeKey: string): WaitingLine;
  /**
   * A live hold on `storeKey` by the code subscribing now (see ../reentrancy), which a reentrant
   * acquisition joins instead of waiting for itself; `undefined` when there is none.
   */
  enclosingHold(storeKey: string): { join(): WorkLease } | undefined;
}

/**
 * `startedAt` (on the wait clock) is when the wait began, from which `waitTimeout` counts: the
 * subscription by default; a multi-key acquisition passes its own, so that one limit covers the
 * whole set.
 */
export function acquisition(ctx: AcquisitionContext, key: string, storeKey: string, settings: AcquireSettings, startedAt?: number): Observable<WorkLease> {
  return new Observable<WorkLease>((subscriber) => {
    if (ctx.closed) {
      subscriber.error(new LockerClosedError(key));
      return;
    }
    // Reentrancy: the subscribing code holds this key already (the work of an enclosing
    // withLock/using of this locker): join its lease, no store call, no wait.
    const outer = settings.reentrant === true ? ctx.enclosingHold(storeKey) : undefined;
    if (outer !== undefined) {
      subscriber.next(outer.join());
      subscriber.complete();
      return;
    }
    const line = ctx.lineFor(key, storeKey);
    const waiter = new Waiter(settings, startedAt ?? ctx.now(), subscriberOutcome(subscriber));
    line.enqueue(waiter);
    return () => line.leave(waiter);
  });
}
