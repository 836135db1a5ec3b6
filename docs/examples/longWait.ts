/**
 * Guide "Operations", long waits: `long-wait` events say whether a wait is behind a holder that
 * keeps the key or behind a slow store. Run by test/docs/examples.test.ts (REDIS_URL).
 */
import { filter, type Subscription } from 'rxjs';
import type { Locker, LockEvent, LongWaitEvent } from 'rxjs-lock';

// #region explain
/** One line on why an acquisition is still waiting. */
export function explainLongWait(event: LongWaitEvent, slowReadMs = 100): string {
  const waited = `${event.key}: waiting for ${Math.round(event.waitedMs)} ms`;
  if (event.error !== undefined) return `${waited}; the store is failing (${event.error.message})`;
  if (event.storeReadMs !== undefined && event.storeReadMs > slowReadMs) {
    return `${waited}; the store is slow (one read took ${Math.round(event.storeReadMs)} ms)`;
  }
  if (event.heldHere) return `${waited}; held by another caller of this process`;
  if (event.holder === undefined) return `${waited}; this store cannot say who holds the key`;
  if (event.holder === null) return `${waited}; the key is free now: the grant is on its way`;
  const { token, seenForMs, ttlMs, waiting } = event.holder;
  return `${waited}; held by ${token} for at least ${Math.round(seenForMs)} ms (${ttlMs} ms of TTL left, ${waiting} processes in line)`;
}

export function logLongWaits(locker: Locker, warn: (line: string) => void): Subscription {
  return locker.events$
    .pipe(filter((event: LockEvent): event is LongWaitEvent => event.type === 'long-wait'))
    .subscribe((event) => warn(explainLongWait(event)));
}
// #endregion explain
