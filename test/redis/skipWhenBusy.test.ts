/**
 * `onBusy: 'skip'` on Redis: instances (lockers on their own connections) that fire the same
 * scheduled job at once run it exactly once; a skip makes one attempt and leaves nothing in the
 * store's line; a store failure is an error, not a skip.
 */
import { Redis } from 'ioredis';
import { lastValueFrom, of, timer, map, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockStoreError, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

function instance() {
  const redis = connect(suite.server);
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store });
  const ready = redis.ping();
  suite.closers.push(async () => {
    await locker.close();
    store.close();
    await redis.quit();
  });
  return { locker, ready };
}

describe("onBusy: 'skip' on Redis", () => {
  it('three instances firing the same job at once: it runs once, the others complete empty and report a skip', async () => {
    const instances = [instance(), instance(), instance()];
    await Promise.all(instances.map((i) => i.ready)); // connected: the three attempts go out together
    const lockers = instances.map((i) => i.locker);
    const events: LockEvent[] = [];
    for (const locker of lockers) locker.events$.subscribe((e) => events.push(e));
    for (let round = 0; round < 5; round++) {
      events.length = 0;
      let runs = 0;
      // held long enough that the three single attempts all meet it held, even on a loaded machine
      const job = (name: number) => timer(300).pipe(map(() => (runs++, name)));
      const results = await Promise.all(lockers.map((locker, i) => lastValueFrom(job(i).pipe(locker.withLock('job:digest', { onBusy: 'skip' }), toArray()))));
      expect(runs).toBe(1);
      expect(results.flat()).toHaveLength(1);
      const skips = events.filter((e) => e.type === 'timed-out');
      expect(skips).toHaveLength(2);
      expect(skips.every((e) => e.type === 'timed-out' && e.skipped && e.attempts === 1)).toBe(true);
      expect(await suite.admin.keys('rxjs-lock:line:*')).toEqual([]);
      expect(await suite.admin.keys('rxjs-lock:places:*')).toEqual([]);
    }
  });

  it('a store failure errors with LockStoreError instead of skipping', async () => {
    // Nothing listens on port 1: every command fails.
    const redis = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    redis.on('error', () => undefined);
    const store = new RedisLockStore(redis);
    const locker = createLocker({ store, commandTimeout: 500 });
    const error = await lastValueFrom(of(1).pipe(locker.withLock('job', { onBusy: 'skip' }))).catch((e: unknown) => e);
    expect(error).toSatisfy(isLockStoreError);
    await locker.close();
    store.close();
    redis.disconnect();
  });
});
