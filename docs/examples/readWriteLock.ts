/**
 * Concept "Read-write locks": readers of a price list share its lock, the writer holds it alone and
 * passes its fence to the store it writes. Run by test/docs/examples.test.ts (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { defer, lastValueFrom } from 'rxjs';
import { createLocker, type Locker } from 'rxjs-lock';
import { FencedResource, RedisLockStore, type FencedWriteResult } from 'rxjs-lock/redis';

export class PriceList {
  private readonly prices: FencedResource;

  constructor(
    redis: Redis,
    private readonly locker: Locker,
  ) {
    this.prices = new FencedResource(redis, 'prices'); // refuses a write with an older fence
  }

  /** Runs `use` on the current list; many readers at once, on every instance, and no writer until `use` is done. */
  read<T>(use: (prices: string | undefined) => Promise<T>): Promise<T> {
    return lastValueFrom(defer(async () => use((await this.prices.read())?.value)).pipe(this.locker.withReadLock('prices')));
  }

  /** One writer at a time, with no reader in between; its fence goes with the write. */
  write(next: string): Promise<FencedWriteResult> {
    return lastValueFrom(this.locker.usingWriteLock('prices', (lease) => this.prices.write(lease.fence, next)));
  }
}

export async function withPriceList<T>(use: (prices: PriceList) => Promise<T>): Promise<T> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, waitTimeout: 5_000 }); // LockTimeoutError past 5 s
  try {
    return await use(new PriceList(redis, locker));
  } finally {
    await locker.close();
    store.close();
    await redis.quit();
  }
}
// #endregion sample
