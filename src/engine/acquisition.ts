/**
 * The acquisition loop: attempt → (held by someone else) back-off → attempt … until the store
 * says yes, the wait runs out, or the store fails. Cold: nothing touches the store before
 * subscription, and each subscription is a new acquisition with a new token.
 *
 * Cancellation safety: unsubscribing stops the loop, and an acquire call still in flight is
 * abandoned; if the store grants it anyway, the engine releases it at once instead of leaking
 * the lock until its TTL (the naive `defer(acquire).pipe(switchMap(…finalize(release)))` leaks
 * exactly there). The same happens to an acquire call that timed out and then succeeded.
 */
import { asyncScheduler, Observable, Subscription } from 'rxjs';
import { v4 as uuidv4 } from 'uuid';
import { LockTimeoutError } from '../errors.js';
import type { AcquireSettings } from '../options/validate.js';
import type { AcquireResult } from '../store/LockStore.js';
import { backoff } from './backoff.js';
import type { LockEngine } from './LockEngine.js';
import type { HeldLease } from './lease/HeldLease.js';
import { callStore, type StoreCall } from './storeCall.js';

export function acquisition(engine: LockEngine, key: string, storeKey: string, settings: AcquireSettings): Observable<HeldLease> {
  return new Observable<HeldLease>((subscriber) => {
    const token = uuidv4();
    const startedAt = engine.now();
    let attempts = 0;
    let call: StoreCall | undefined;
    let sleep: Subscription | undefined;

    const attempt = (): void => {
      if (subscriber.closed) return;
      attempts++;
      const sentAt = performance.now();
      call = callStore<AcquireResult>(engine.deadlines, 'acquire', key, () => engine.store.tryAcquire(storeKey, token, settings.ttl), {
        value: (result) => {
          call = undefined;
          if (result.acquired) {
            engine.reportAcquired(key, token, result.fence, engine.now() - startedAt, attempts);
            // An events$ handler may have ended this acquisition just now: nobody takes the lease.
            if (subscriber.closed) {
              engine.releaseAbandoned(key, storeKey, token);
              return;
            }
            subscriber.next(engine.openLease(key, storeKey, token, result.fence, settings, sentAt));
            subscriber.complete();
            return;
          }
          const waited = engine.now() - startedAt;
          const remaining = settings.waitTimeout - waited;
          if (remaining <= 0) {
            engine.reportTimedOut(key, waited, attempts);
            subscriber.error(new LockTimeoutError(key, waited, attempts));
            return;
          }
          wait(remaining);
        },
        error: (error) => {
          call = undefined;
          engine.reportAcquireFailed(key, error, attempts);
          subscriber.error(error);
        },
        // Granted after a timeout or an unsubscribe: nobody holds this lease, give it back.
        late: (result) => {
          if (result.acquired) engine.releaseAbandoned(key, storeKey, token);
        },
      });
    };

    /** Sleeps as the retry policy says, then attempts again. */
    const wait = (remaining: number): void => {
      const current = new Subscription();
      sleep = current;
      let due = false;
      let synchronous = true;
      try {
        current.add(
          backoff(settings.retry, attempts, remaining, engine.random, engine.scheduler).subscribe({
            next: () => {
              if (due) return;
              due = true;
              // A notifier that fires during subscribe (`of(0)`) must not chain attempts as
              // microtasks: with a store that answers at once, no timer (not even the holder's
              // release) could ever run. Such attempts go through the scheduler.
              if (synchronous) current.add((engine.scheduler ?? asyncScheduler).schedule(attempt));
              else attempt();
            },
            error: (error: unknown) => subscriber.error(error),
            complete: () => {
              if (due) return;
              // A custom retry policy completed without emitting: it says stop waiting.
              const waitedNow = engine.now() - startedAt;
              engine.reportTimedOut(key, waitedNow, attempts);
              subscriber.error(new LockTimeoutError(key, waitedNow, attempts));
            },
          }),
        );
      } catch (error) {
        // The injected random source threw.
        subscriber.error(error);
      }
      synchronous = false;
    };

    attempt();
    return () => {
      call?.abandon();
      sleep?.unsubscribe();
    };
  });
}
