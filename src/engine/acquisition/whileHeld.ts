/**
 * Runs the protected work while a lease is held and gives the lease back exactly once, however
 * the work ends, or stops the work when the lease is lost.
 *
 * Written as one Observable rather than a chain of operators (`mergeMap`, `concat`, `catchError`,
 * `finalize`, a `lost$` subject): every `withLock` subscription pays for it, and the chain cost
 * more CPU than the rest of the engine's acquire + release path.
 */
import { config, Observable, type Subscription } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import type { OnLost } from '../../options/LockerOptions.js';
import type { GuardedLease } from '../lease/GuardedLease.js';
import { currentFrame, runInFrame } from '../reentrancy/frames.js';

/**
 * Called when a stream is subscribed (capturing what it needs of that moment, e.g. the reentrancy
 * context); returns how to run the work once the acquisition emits its grant `G`: `start(lease)`
 * runs it, and the scope may run it in a context and hand it another lease (a hold on a shared
 * one, or the set made of several grants).
 */
export type WorkScope<G, L extends GuardedLease> = () => (granted: G, start: (lease: L) => Subscription) => Subscription;

/**
 * Waits for `granted$` (an acquisition: one grant, an error, or nothing when `onBusy: 'skip'`
 * found a key held), then runs `work(lease)` while the lease `scope` makes of the grant is held
 * (see {@link whileHeld}). Unsubscribing while waiting leaves the line; while holding, stops the
 * work and releases.
 */
export function runWhileHeld<T, G, L extends GuardedLease>(
  granted$: Observable<G>,
  work: (lease: L) => Observable<T>,
  onLost: OnLost,
  scope: WorkScope<G, L>,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let held: Subscription | undefined;
    const enter = scope();
    const start = (lease: L): Subscription =>
      whileHeld(lease, work(lease), onLost).subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    const waiting = granted$.subscribe({
      next: (granted) => {
        const running = enter(granted, start);
        // The work may have unsubscribed its own stream while it was being subscribed (from
        // inside the work): the teardown below ran before there was anything to stop.
        if (subscriber.closed) running.unsubscribe();
        else held = running;
      },
      error: (error: unknown) => subscriber.error(error),
      // Without a lease (`onBusy: 'skip'` found the key held): the stream completes empty.
      complete: () => {
        if (held === undefined) subscriber.complete();
      },
    });
    return () => {
      waiting.unsubscribe();
      held?.unsubscribe();
    };
  });
}

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
export function whileHeld<T>(lease: GuardedLease, work$: Observable<T>, onLost: OnLost): Observable<T> {
  return new Observable<T>((subscriber) => {
    let work: Subscription | undefined;
    // A loss is found in a callback of the engine (the lease timer, a renewal's reply, close()),
    // which may run in another stream's reentrancy frames: the work and the subscriber hear of it
    // in the frames this stream was subscribed in (see ../reentrancy).
    const frame = currentFrame();
    const lost = (error: LockLostError): void => {
      if (onLost !== 'error' && error.reason !== 'locker-closed') return;
      // The work stops first, so that a `finalize` inside it runs before the release is sent (as
      // on every other path); the release is under way before the subscriber hears of the loss.
      // A `finalize` that throws is reported as RxJS reports it, never thrown into the engine
      // (this runs inside the lease's loss, from a timer or from close()).
      try {
        work?.unsubscribe();
      } catch (failure) {
        reportUnhandled(failure);
      }
      void lease.release();
      subscriber.error(error);
    };
    lease.watchLoss((error) => runInFrame(frame, () => lost(error)));
    if (!subscriber.closed) {
      /** How the work ended by itself (complete or error), to pass on once the release is answered. */
      let end: (() => void) | undefined;
      // The work is over once it ends by itself: a loss from then on (a `finalize` inside it that
      // closes the locker) no longer turns its end into a LockLostError.
      work = work$.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => {
          lease.unwatchLoss();
          end = () => subscriber.error(error);
        },
        complete: () => {
          lease.unwatchLoss();
          end = () => subscriber.complete();
        },
      });
      // The release starts once the work's own teardown (a `finalize` inside it) has run: this
      // teardown comes after those (at once, if the work has ended already).
      work.add(() => {
        if (end === undefined) return;
        lease.unwatchLoss();
        void lease.release().then(end);
      });
    }
    return () => {
      try {
        work?.unsubscribe();
      } finally {
        // (also when a `finalize` inside the work throws: RxJS reports that, the lock is given back)
        lease.unwatchLoss();
        void lease.release();
      }
    };
  });
}

/** As RxJS reports an error nobody can receive: `config.onUnhandledError`, or thrown in a timer. */
function reportUnhandled(error: unknown): void {
  setTimeout(() => {
    const { onUnhandledError } = config;
    if (onUnhandledError) onUnhandledError(error);
    else throw error;
  });
}
