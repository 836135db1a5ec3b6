/**
 * Shared locks on a real Redis behind a slow link (a proxy that holds Redis's answers back): a grant
 * whose answer arrives after the lease's validity is given back and asked for again, as a mutex's
 * is, instead of being handed to the work lost already; with every answer late, the wait ends as a
 * time-out and leaves nothing held. (The same on the in-memory store: test/engine/sharedLateGrants.test.ts.)
 */
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { delayProxy, type DelayProxy } from '../support/delayProxy.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite();

/** A locker on a direct connection, closed after the test. */
function directLocker(): Locker {
  const client = connect(suite.server);
  const store = new RedisLockStore(client);
  const locker = createLocker({ store, retry: { minDelay: 2, jitter: 4 } });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

/** A locker (TTL 100 ms: 97 ms of validity) whose connection goes through a slow-link proxy. */
async function slowLocker(): Promise<{ locker: Locker; proxy: DelayProxy; events: LockEvent[] }> {
  const proxy = await delayProxy(suite.server.port, 0);
  const client = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
  client.on('error', () => undefined);
  const store = new RedisLockStore(client);
  const locker = createLocker({ store, ttl: 100, retry: { minDelay: 2, jitter: 4 } });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  suite.closers.push(
    () => proxy.close(),
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  // Warm up while the link is quick: the connection is open and the scripts are loaded on it.
  const warm = await firstValueFrom(locker.acquirePermit('warm-up', { limit: 1 }));
  await warm.release();
  return { locker, proxy, events };
}

describe('shared locks behind a slow link', () => {
  it('a grant answered after its validity is given back and asked for again; the work holds one permit', async () => {
    const { locker, proxy, events } = await slowLocker();
    const other = directLocker();
    proxy.delayMs = 150; // the grant's answer comes after the lease's 97 ms of validity
    const run = lastValueFrom(
      locker.usingPermit(
        'slow',
        async (lease) => {
          // one permit of two is held: another process gets the second one, not a third
          const second = await firstValueFrom(other.acquirePermit('slow', { limit: 2, waitTimeout: 0 }));
          const third = await firstValueFrom(other.acquirePermit('slow', { limit: 2, waitTimeout: 0 })).catch((e: unknown) => e);
          await second.release();
          return { valid: lease.validUntil > performance.now(), thirdTimedOut: isLockTimeoutError(third) };
        },
        { limit: 2, waitTimeout: 3_000 },
      ),
    );
    await sleep(40); // the first attempt has run in Redis; its answer is on the slow link
    proxy.delayMs = 0;
    expect(await run).toEqual({ valid: true, thirdTimedOut: true });
    expect(events.filter((e) => e.type === 'lost')).toEqual([]);
    expect(events.filter((e) => e.type === 'acquired' && e.key === 'slow')).toHaveLength(1);
  });

  it('with every answer late, the wait ends with LockTimeoutError and leaves the permits free', async () => {
    const { locker, proxy, events } = await slowLocker();
    proxy.delayMs = 150;
    const error = await firstValueFrom(locker.acquireWriteLock('late', { waitTimeout: 400 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(events.filter((e) => e.type === 'lost' || (e.type === 'acquired' && e.key === 'late'))).toEqual([]);
    await sleep(200); // the last give-back's answer crosses the link
    const free = await firstValueFrom(directLocker().acquireWriteLock('late', { waitTimeout: 0 }));
    await free.release();
  });
});
