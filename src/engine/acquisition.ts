/**
 * One acquisition as an Observable. Cold: nothing happens before subscription, and each
 * subscription is a new waiter in its key's local gate (see ./gate), which emits the lease and
 * completes once the lock is this waiter's, or errors (`LockTimeoutError`, `LockStoreError`).
 *
 * Cancellation safety: unsubscribing takes the waiter out of line; if it was the last one, the
 * store session is abandoned, and a lock the store grants anyway is given back at once (the naive
 * `defer(acquire).pipe(switchMap(…finalize(release)))` leaks exactly there). A lease granted
 * while the subscriber is leaving (an `events$` handler unsubscribed it) is released at once.
 */
import { Observable } from 'rxjs';
import type { AcquireSettings } from '../options/validate.js';
import { Waiter } from './gate/Waiter.js';
import type { HeldLease } from './lease/HeldLease.js';
import type { LockEngine } from './LockEngine.js';

export function acquisition(engine: LockEngine, key: string, storeKey: string, settings: AcquireSettings): Observable<HeldLease> {
  return new Observable<HeldLease>((subscriber) => {
    const gate = engine.gateFor(key, storeKey);
    const waiter = new Waiter(settings, engine.now(), {
      granted: (lease) => {
        if (subscriber.closed) {
          void lease.release();
          return;
        }
        subscriber.next(lease);
        subscriber.complete();
      },
      failed: (error) => subscriber.error(error),
    });
    gate.enqueue(waiter);
    return () => gate.leave(waiter);
  });
}
