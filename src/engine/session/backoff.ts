/**
 * The sleep between two attempts on a held lock, as an Observable that emits once when it is
 * time to try again, so it runs on whatever scheduler the locker was given (a virtual clock in
 * tests). The sleep never goes past the end of the wait: what is left of it caps every step.
 */
import { defer, race, take, timer, type Observable, type SchedulerLike } from 'rxjs';
import type { RetryPolicy } from '../../options/validate.js';

/** Jittered delay for the `{ minDelay, jitter }` policy: uniform in [minDelay, minDelay + jitter). */
export function jitteredDelay(minDelay: number, jitter: number, random: () => number): number {
  const r = random();
  // A random source that strays from [0, 1) (NaN included) must not turn into busy polling.
  return minDelay + (r >= 0 && r < 1 ? r : 0) * jitter;
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
    // Validation keeps minDelay + jitter within the longest timer, so only the wait caps this.
    const delay = Math.min(jitteredDelay(policy.minDelay, policy.jitter, random), remainingMs);
    return scheduler ? timer(delay, scheduler) : timer(delay);
  }
  // defer: a policy that throws, or returns something that is not an ObservableInput, errors the
  // acquisition instead of throwing inside a promise callback.
  const custom = defer(() => policy(attempt)).pipe(take(1));
  if (remainingMs === Infinity) return custom;
  // The custom notifier may be slower than the wait: the end of the wait then forces a last attempt.
  const deadline = scheduler ? timer(remainingMs, scheduler) : timer(remainingMs);
  return race(custom, deadline);
}
