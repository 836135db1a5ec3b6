/**
 * Attack on shared-lock waiters that hold from the 'granted' signal, on a real Redis (what held,
 * kept as a guard): three lockers on a semaphore (limit 3, weights 1-2) and a read-write lock, with
 * short TTLs (grants lapse unclaimed) and short places; two of them hear their signals through a
 * link whose delay keeps changing (signals arrive after later attempts' answers, or after their
 * grant lapsed), and the subscriber connections are killed now and then (CLIENT KILL TYPE
 * pubsub); acquisitions are cancelled at random moments. At every grant: the permits held do not
 * exceed the limit, no writer overlaps anyone, every writer's fence is above every fence seen
 * before; afterwards nothing is left in Redis and the whole capacity is free.
 */
import { Redis } from 'ioredis';
import { firstValueFrom, type Observable, race, timer, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { delayProxy, type DelayProxy } from '../support/delayProxy.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

function newLocker(storeOptions: RedisLockStoreOptions, proxy?: DelayProxy): Locker {
  const client = connect(suite.server, { maxRetriesPerRequest: null });
  let subscriber: Redis | undefined;
  if (proxy !== undefined) {
    subscriber = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: null, retryStrategy: () => 20, autoResubscribe: false });
    subscriber.on('error', () => undefined);
  }
  const store = new RedisLockStore(client, { ...storeOptions, ...(subscriber ? { subscriber } : {}) });
  const locker = createLocker({ store, retry: { minDelay: 2, jitter: 8 } });
  suite.closers.push(
    () => client.disconnect(),
    () => subscriber?.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

interface Held {
  lease: Lease;
  weight: number;
  write: boolean;
}

describe('waiters holding from signals, under stale signals, drops and cancels', () => {
  it('no overrun with lapsing grants, late signals and dropped subscriptions', async () => {
    const proxy = await delayProxy(suite.server.port, 0);
    suite.closers.push(() => proxy.close());
    const lockers = [newLocker({ placeTtl: 300 }), newLocker({ placeTtl: 200 }, proxy), newLocker({ placeTtl: 1000 }, proxy)];
    const holding = new Set<Held>();
    const problems: string[] = [];
    let maxFence = 0;
    let wins = 0;
    let stop = false;
    const chaos = (async () => {
      while (!stop) {
        proxy.delayMs = Math.random() < 0.5 ? 0 : Math.random() * 400;
        if (Math.random() < 0.1) await suite.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => undefined);
        await sleep(50);
      }
    })();
    const LIMIT = 3;
    const worker = async (i: number) => {
      for (let n = 0; n < 25; n++) {
        const locker = lockers[(i + n) % lockers.length]!;
        const kind = (i + n) % 3;
        const weight = 1 + ((i * 7 + n) % 2);
        const ttl = 60 + Math.floor(Math.random() * 200);
        const acquisition: Observable<Lease> =
          kind === 0
            ? locker.acquirePermit('sem', { limit: LIMIT, permits: weight, ttl, waitTimeout: 3_000 })
            : kind === 1
              ? locker.acquireReadLock('rw', { ttl, waitTimeout: 3_000 })
              : locker.acquireWriteLock('rw', { ttl, waitTimeout: 3_000 });
        const got = await firstValueFrom(race(acquisition, timer(Math.random() * 600).pipe(map(() => undefined)))).catch(() => undefined);
        if (got === undefined) continue;
        wins++;
        const me: Held = { lease: got, weight, write: kind === 2 };
        if (kind === 0) {
          let used = weight;
          for (const h of holding) if (h.lease.key === 'sem' && h.lease.held) used += h.weight;
          if (used > LIMIT) problems.push(`sem overrun ${used} fence ${got.fence}`);
        } else {
          for (const h of holding)
            if (h.lease.key === 'rw' && h.lease.held && (h.write || me.write)) problems.push(`rw overlap ${h.lease.fence} ${got.fence} write=${me.write}`);
          if (me.write && got.fence <= maxFence) problems.push(`writer fence ${got.fence} <= ${maxFence}`);
          maxFence = Math.max(maxFence, got.fence);
        }
        holding.add(me);
        await sleep(Math.random() * 40);
        holding.delete(me);
        await got.release();
      }
    };
    await Promise.all(Array.from({ length: 9 }, (_, i) => worker(i)));
    stop = true;
    await chaos;
    expect(wins).toBeGreaterThan(0);
    expect(problems).toEqual([]);
    // every place and permit given back: only fence counters (2 ms) may linger
    await eventually(async () => (await suite.admin.keys('*')).every((k) => k.includes('shared-fence')), 3_000);
    const all = await firstValueFrom(lockers[0]!.acquirePermit('sem', { limit: LIMIT, permits: LIMIT, waitTimeout: 0 }));
    const writer = await firstValueFrom(lockers[1]!.acquireWriteLock('rw', { waitTimeout: 0 }));
    await all.release();
    await writer.release();
  }, 60_000);
});
