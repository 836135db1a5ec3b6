/**
 * Concept "Lock-delay": a holder that stops renewing keeps the key blocked `lockDelay` past its
 * lease's deadline, while a release frees it at once. Run by test/docs/examples.test.ts with short
 * times on a private Redis (REDIS_URL).
 */
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, NEVER } from 'rxjs';
import { createLocker, isLockLostError } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

// #region locker
export function printerLocker(store: RedisLockStore) {
  // The label printer cannot check fencing tokens. If a holder stalls (a long GC pause, a frozen
  // VM) its lease ends after `ttl`, but a print job it had already sent may still be arriving:
  // keep the printer from the next holder for 5 s more. A release frees it at once.
  return createLocker({ store, ttl: 10_000, lockDelay: 5_000 });
}
// #endregion locker

// #region stalled
export interface Timing {
  ttl: number;
  lockDelay: number;
}

/** Plays a holder that stops renewing, then a waiter; when did the waiter get the key? */
export async function stalledHolder({ ttl, lockDelay }: Timing, log: (line: string) => void = console.log) {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  // `renew: false` plays a process that froze: its lease is never extended.
  const stalled = createLocker({ store, ttl, lockDelay, renew: false });
  const next = createLocker({ store, ttl, lockDelay, waitTimeout: 10 * (ttl + lockDelay) });
  try {
    let grantedAt = 0;
    const holding = lastValueFrom(stalled.using('printer', () => ((grantedAt = performance.now()), NEVER))).catch((e: unknown) => e);
    while (grantedAt === 0) await new Promise((resolve) => setTimeout(resolve, 1));

    const waiting = firstValueFrom(next.acquire('printer'));
    const lost = await holding; // at the lease's deadline: LockLostError, reason 'expired'
    log(`holder lost its lease after ${Math.round(performance.now() - grantedAt)} ms (${isLockLostError(lost) ? lost.reason : lost})`);

    const lease = await waiting; // only once the store lets the key go: ttl + lockDelay
    const waitedMs = performance.now() - grantedAt;
    log(`next holder got the printer ${Math.round(waitedMs)} ms after the first one`);

    await lease.release(); // a release, not a lapse: free at once
    const third = await firstValueFrom(next.acquire('printer', { waitTimeout: 0 }));
    await third.release();
    return { lost, waitedMs };
  } finally {
    await Promise.all([stalled.close(), next.close()]);
    store.close();
    await redis.quit();
  }
}
// #endregion stalled
