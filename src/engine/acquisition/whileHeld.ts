/**
 * Runs the protected work while a lease is held and gives the lease back exactly once, however
 * the work ends, or stops the work when the lease is lost.
 */
import { catchError, concat, defer, finalize, ignoreElements, Observable, throwError } from 'rxjs';
import type { OnLost } from '../../options/LockerOptions.js';
import type { HeldLease } from '../lease/HeldLease.js';

/**
 * Mirrors `work$`, then releases `lease`. Complete and error are passed on only once the release
 * has been answered (it never fails: failures become `false` and a `release-failed` event), so
 * whoever reacts to them, including code after `await lastValueFrom(…)`, runs with the lock
 * already given back. An unsubscribe starts the release and lets it finish in the background.
 * `finalize` operators inside `work$` run before the release is sent.
 *
 * With `onLost: 'error'`, a lost lease unsubscribes `work$` and errors with its `LockLostError`
 * at once: the release (an owner-checked delete, harmless if the key is gone or taken) is only
 * started, since waiting for a store that may be unreachable would delay the news. A lease lost
 * because the locker was closed stops the work whatever `onLost` says.
 */
export function whileHeld<T>(lease: HeldLease, work$: Observable<T>, onLost: OnLost): Observable<T> {
  const release$ = defer(() => lease.release()).pipe(ignoreElements());
  return concat(
    stopWhenLost(lease, work$, onLost).pipe(
      catchError((error: unknown) => {
        if (error === lease.lostWith) {
          void lease.release();
          return throwError(() => error);
        }
        return concat(release$, throwError(() => error));
      }),
    ),
    release$,
  ).pipe(finalize(() => void lease.release()));
}

/** `work$`, unsubscribed and replaced by the loss error as soon as the lease is lost (as `onLost` says). */
function stopWhenLost<T>(lease: HeldLease, work$: Observable<T>, onLost: OnLost): Observable<T> {
  return new Observable<T>((subscriber) => {
    const lost = lease.lost$.subscribe({
      next: (error) => {
        if (onLost === 'error' || error.reason === 'locker-closed') subscriber.error(error);
      },
    });
    if (!subscriber.closed) subscriber.add(work$.subscribe(subscriber));
    return lost;
  });
}
