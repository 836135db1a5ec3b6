/**
 * Runs the protected work while a lease is held and gives the lease back exactly once, however
 * the work ends.
 */
import { catchError, concat, defer, finalize, ignoreElements, throwError, type Observable } from 'rxjs';
import type { Lease } from './Lease.js';

/**
 * Mirrors `work$`, then releases `lease`. Complete and error are passed on only once the release
 * has been answered (it never fails: failures become `false` and a `release-failed` event), so
 * whoever reacts to them, including code after `await lastValueFrom(…)`, runs with the lock
 * already given back. An unsubscribe starts the release and lets it finish in the background.
 * `finalize` operators inside `work$` run before the release is sent.
 */
export function whileHeld<T>(lease: Lease, work$: Observable<T>): Observable<T> {
  const release$ = defer(() => lease.release()).pipe(ignoreElements());
  return concat(work$.pipe(catchError((error: unknown) => concat(release$, throwError(() => error)))), release$).pipe(
    finalize(() => void lease.release()),
  );
}
