/**
 * Renewal of many shared holders (semaphore permits, read locks) on a real Redis shares round
 * trips as the mutex's does: the holders whose renewal falls due together are extended in one
 * pipeline (`extendSharedMany`), not one script call each. Round trips are counted on the client
 * the store uses (a pipeline is one, a lone script call one).
 */
import { firstValueFrom, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { countingClient } from '../../support/countingClient.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

describe('renewals of shared holders', () => {
  it('30 holders (permits and read locks) are renewed in a few pipelines per interval, not 30 calls', async () => {
    const client = connect(suite.server);
    const counting = countingClient(client);
    const store = new RedisLockStore(counting.client);
    const locker = createLocker({ store, ttl: 900, waitTimeout: 2_000 }); // renewed every 300 ms
    suite.closers.push(
      () => client.disconnect(),
      () => store.close(),
      () => locker.close(),
    );
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const takes: Array<Observable<Lease>> = [
      ...Array.from({ length: 20 }, (_, i) => locker.acquirePermit(`pool:${i % 4}`, { limit: 5 })),
      ...Array.from({ length: 10 }, (_, i) => locker.acquireReadLock(`doc:${i % 3}`)),
    ];
    const leases = await Promise.all(takes.map((take) => firstValueFrom(take)));
    const before = { direct: counting.direct, batches: counting.batches };
    await sleep(700); // two renewal intervals
    const renewed = () => events.filter((e) => e.type === 'renewed').length;
    expect(renewed()).toBeGreaterThanOrEqual(30);
    // every renewal went out in a pipeline: none alone, and a handful of pipelines for them all
    await eventually(() => counting.batched === renewed(), 2_000);
    expect(counting.direct - before.direct).toBe(0);
    expect(counting.batches - before.batches).toBeLessThanOrEqual(8);
    expect(leases.every((lease) => lease.held)).toBe(true);
    await Promise.all(leases.map((lease) => lease.release()));
    expect(await suite.admin.keys('*shared-holders*')).toEqual([]);
  });
});
