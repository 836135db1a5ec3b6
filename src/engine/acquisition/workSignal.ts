/**
 * The `AbortSignal` that `using` hands its work: it aborts when the lease is lost (the reason is
 * the `LockLostError`) or when the work's subscription ends for any other reason (the subscriber
 * left, the work ended, the stream errored), so Promise-based work — fetch, database drivers —
 * can stop too.
 */
import { from, Observable, type ObservableInput } from 'rxjs';
import type { GuardedLease } from '../lease/GuardedLease.js';
import type { Lease } from '../lease/Lease.js';

/**
 * The work of `using`: gets the lease and a signal that aborts when it should stop (the lease was
 * lost: `signal.reason` is the `LockLostError`; or the subscription ended: an `'AbortError'`).
 *
 * @example
 * ```ts
 * const work: LockedWork<Response> = (lease, signal) =>
 *   fetch(`https://api.example/jobs?fence=${lease.fence}`, { method: 'POST', signal });
 * locker.using('job:sync', work).subscribe({ error: (e) => console.error(e) });
 * ```
 */
export type LockedWork<R> = (lease: Lease, signal: AbortSignal) => ObservableInput<R>;

/**
 * Subscribes to `work(lease, signal)`, aborting `signal` on loss or at the end of the subscription
 * (`lease`: one lease, or a set of them).
 */
export function withWorkSignal<R, L extends GuardedLease>(lease: L, work: (lease: L, signal: AbortSignal) => ObservableInput<R>): Observable<R> {
  return new Observable<R>((subscriber) => {
    const controller = new AbortController();
    const lost = lease.lost$.subscribe((error) => controller.abort(error));
    subscriber.add(() => {
      lost.unsubscribe();
      // The loss may end the subscription before our own lost$ listener hears of it.
      if (!controller.signal.aborted) controller.abort(lease.lostWith ?? ended());
    });
    subscriber.add(from(work(lease, controller.signal)).subscribe(subscriber));
  });
}

function ended(): DOMException {
  return new DOMException('rxjs-lock: the locked work ended or its subscriber left; the lock is being given back', 'AbortError');
}
