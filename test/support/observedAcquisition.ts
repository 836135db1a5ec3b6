/** An acquisition subscribed to and watched: what it ended with, and when on a (virtual) clock. */
import type { Subscription } from 'rxjs';
import type { Lease, Locker } from '../../src/index.js';

export interface ObservedAcquisition {
  lease?: Lease;
  error?: unknown;
  /** `now()` when it got the lease or failed. */
  at?: number;
  sub?: Subscription;
}

/** Subscribes to `locker.acquire(key, options)` and records its outcome at `now()`. */
export function observeAcquisition(
  locker: Pick<Locker, 'acquire'>,
  key: string,
  options: Parameters<Locker['acquire']>[1],
  now: () => number,
): ObservedAcquisition {
  const outcome: ObservedAcquisition = {};
  outcome.sub = locker.acquire(key, options).subscribe({
    next: (lease) => {
      outcome.lease = lease;
      outcome.at = now();
    },
    error: (error: unknown) => {
      outcome.error = error;
      outcome.at = now();
    },
  });
  return outcome;
}
