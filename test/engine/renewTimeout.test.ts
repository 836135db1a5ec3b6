/**
 * A renewal whose store call times out (commandTimeout) is a failed renewal like any other: it is
 * reported (`renew-failed`) and tried again before the lease's deadline, so a store that answers
 * again keeps the lease. (A renewal call that fails as a whole — a time-out, or a batch call that
 * rejects — reaches each lease through LeaseKeeper.renew's `error` handler; the mutation run of
 * the lease keeping found that handler could be emptied with every test green: the lease then
 * waited for an answer that never came and was lost at its deadline.)
 */
import { filter, firstValueFrom } from 'rxjs';
import { expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type ExtendOutcome } from '../../src/index.js';
import { sleep } from '../support/timing.js';

/** The memory store, with the next `hangs` extend calls never answered. */
class HangingExtends extends MemoryLockStore {
  hangs = 0;
  extends = 0;
  override extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    this.extends++;
    if (this.hangs > 0) {
      this.hangs--;
      return new Promise<ExtendOutcome>(() => undefined);
    }
    return super.extend(key, token, ttlMs);
  }
}

it('a renewal that times out is reported and tried again: the lease outlives its first TTL', async () => {
  const store = new HangingExtends();
  const locker = createLocker({ store, ttl: 1_500, commandTimeout: 150 });
  try {
    const failed = firstValueFrom(locker.events$.pipe(filter((e) => e.type === 'renew-failed')));
    const lease = await firstValueFrom(locker.acquire('k'));
    store.hangs = 1;
    const event = await failed;
    expect(event).toMatchObject({ type: 'renew-failed', key: 'k' });
    // past the TTL the lease was granted with: only renewals after the timed-out one kept it
    await sleep(2_500);
    expect(store.extends).toBeGreaterThanOrEqual(2);
    expect(lease.held).toBe(true);
    expect(await lease.release()).toBe(true);
  } finally {
    await locker.close();
  }
});
