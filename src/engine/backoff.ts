/**
 * The sleep between two attempts on a held lock, as an Observable that emits once when it is
 * time to try again, so it runs on whatever scheduler the locker was given (a virtual clock in
 * tests). The sleep never goes past the end of the wait: what is left of it caps every step.
 */
import { from, race, take, timer, type Observable, type SchedulerLike } from 'rxjs';
import type { RetryPolicy } from '../options/validate.js';

/** Jittered delay for the `{ minDelay, jitter }` policy: uniform in [minDelay, minDelay + jitter). */
export function jitteredDelay(minDelay: number, jitter: number, random: () => number): number {
  return minDelay + random() * jitter;
}

/**
 * Emits once when the next attempt is due; completes without emitting when a custom policy says
 * to stop. `remainingMs` is what is left of the wait (> 0).
 */
export function backoff(
  policy: RetryPolicy,
  attempt: number,
  remainingMs: number,
  random: () => number,
  scheduler: SchedulerLike | undefined,
): Observable<unknown> {
  if (typeof policy !== 'function') {
    const delay = Math.min(jitteredDelay(policy.minDelay, policy.jitter, random), remainingMs);
    return scheduler ? timer(delay, scheduler) : timer(delay);
  }
  const custom = from(policy(attempt)).pipe(take(1));
  if (remainingMs === Infinity) return custom;
  // The custom notifier may be slower than the wait: the end of the wait then forces a last attempt.
  const deadline = scheduler ? timer(remainingMs, scheduler) : timer(remainingMs);
  return race(custom, deadline);
}
