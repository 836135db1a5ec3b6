/**
 * Waiting for a lock to be free without taking it, by looking again and again: what
 * `locker.waitUntilFree` and `locker.waitUntilPermitsFree` share. It looks at once; while the lock
 * is held it sleeps with the acquisition's back-off (`retry`), each sleep capped by the time until
 * the holder's lease ends (when the look says it: an expiry frees the lock unannounced) and by what
 * is left of `waitTimeout`, then looks again. It emits once and completes when a look finds the
 * lock free, errors with `LockTimeoutError` when the wait is over (or a retry function gives up),
 * and with the look's error when one fails. Unsubscribing stops the sleep and abandons the look.
 */
import { Observable, type Subscription } from 'rxjs';
import { LockTimeoutError } from '../../errors/errors.js';
import type { AcquireSettings } from '../../options/validate.js';
import type { StoreCall } from '../calls/storeCall.js';
import { backoff } from '../session/backoff.js';
import type { Clock } from '../timing/Clock.js';

/** What one look found: free, or held (with the time until the first holder's lease ends, when known). */
export type Look = { readonly free: true } | { readonly free: false; readonly holderTtl?: number | undefined };

/**
 * One look: answers through `answer` (maybe synchronously) or `fail`, and returns its store call,
 * if it made one, to abandon when the subscriber leaves.
 */
export type LookOnce = (answer: (look: Look) => void, fail: (error: unknown) => void) => StoreCall | undefined;

export function pollUntilFree(key: string, settings: AcquireSettings, clock: Clock, look: LookOnce): Observable<void> {
  return new Observable<void>((subscriber) => {
    const startedAt = clock.now();
    let looks = 0;
    let call: StoreCall | undefined;
    let sleep: Subscription | undefined;
    const timedOut = (): void => subscriber.error(new LockTimeoutError(key, clock.now() - startedAt, looks));
    const again = (holderTtl: number | undefined): void => {
      const remaining = settings.waitTimeout - (clock.now() - startedAt);
      if (remaining <= 0) {
        timedOut();
        return;
      }
      // (+1: Redis expires a key once its TTL has passed, not at the instant)
      const cap = holderTtl === undefined ? remaining : Math.min(remaining, holderTtl + 1);
      let woke = false;
      sleep = backoff(settings.retry, looks, cap, clock.random, clock.scheduler).subscribe({
        next: () => {
          woke = true;
          lookNow();
        },
        // a custom retry policy that completes without emitting gives up, as for an acquisition
        complete: () => {
          if (!woke) timedOut();
        },
      });
    };
    const lookNow = (): void => {
      sleep?.unsubscribe();
      sleep = undefined;
      looks++;
      call = look(
        (found) => {
          call = undefined;
          if (found.free) {
            subscriber.next();
            subscriber.complete();
          } else again(found.holderTtl);
        },
        (error) => subscriber.error(error),
      );
    };
    lookNow();
    return () => {
      call?.abandon();
      sleep?.unsubscribe();
    };
  });
}
