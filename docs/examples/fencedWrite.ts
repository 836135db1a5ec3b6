/**
 * Concept "Efficiency, correctness and fencing": a resource that refuses writes from a holder
 * whose lease ended without it noticing. Run by test/docs/examples.test.ts (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createLocker, isLockTimeoutError, usingLock } from 'rxjs-lock';
import { FencedResource, RedisLockStore, type FencedWriteResult } from 'rxjs-lock/redis';

export async function writeLedger(entry: string, log: (line: string) => void = console.log): Promise<FencedWriteResult | undefined> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store });
  const ledger = new FencedResource(redis, 'ledger:7');
  try {
    // usingLock hands the lease to the work: pass its fence to the resource with every write.
    const result = await lastValueFrom(usingLock('ledger:7', (lease) => ledger.write(lease.fence, entry), { locker }));
    if (!result.accepted) log(`refused: a newer holder (fence ${result.highestFence}) has written`);
    return result;
  } catch (error) {
    if (isLockTimeoutError(error)) {
      log('ledger:7 stayed busy: nothing written');
      return undefined;
    }
    throw error;
  } finally {
    await locker.close();
    store.close();
    await redis.quit();
  }
}
// #endregion sample
