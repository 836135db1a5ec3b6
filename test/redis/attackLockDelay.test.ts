/**
 * Attacks on lock-delay (`lockDelay`) on real Redis: a quorum store whose measured validity the
 * delay leaves little or nothing of (3 nodes); write locks and semaphores, whose holders' keys the
 * delay keeps too, handed over through the shared line with a delay longer than the place TTL.
 */
import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

describe('lock-delay on a RedlockStore (3 nodes) when the drift of ttl + lockDelay eats the validity', () => {
  const nodes = quorumNodes(3);

  it('nothing left after the delay (lockDelay 120 × ttl): the lock is taken with one round, not taken and given back until the wait ends', async () => {
    const locker = createLocker({ store: nodes.store(), ttl: 500, lockDelay: 60_000, waitTimeout: 1_000 });
    const events: LockEvent['type'][] = [];
    locker.events$.subscribe((e) => events.push(e.type));
    try {
      const lease = await firstValueFrom(locker.acquire('drifted'));
      expect(lease.held).toBe(true);
      expect(await Promise.all(nodes.admins.map((admin) => admin.get('lock:drifted')))).toEqual([lease.token, lease.token, lease.token]);
      expect(await lease.release()).toBe(true);
      expect(events.filter((type) => type !== 'renewed')).toEqual(['acquired', 'released']);
    } finally {
      await locker.close();
    }
  });

  it('less left than the renewal interval (lockDelay 75 × ttl): the lease is renewed before its deadline and outlives it', async () => {
    const locker = createLocker({ store: nodes.store(), ttl: 2_000, lockDelay: 150_000 });
    let renewals = 0;
    locker.events$.subscribe((e) => e.type === 'renewed' && renewals++);
    try {
      // the grant's validity is at most 2,000 − 1,522 ms (the renewal interval: 666 ms); the work runs 700 ms
      const outcome = await lastValueFrom(locker.using('short', () => timer(700))).then(
        () => 'done',
        (e: unknown) => e,
      );
      expect(outcome).toBe('done');
      expect(renewals).toBeGreaterThanOrEqual(1);
    } finally {
      await locker.close();
    }
  });
});

describe('lock-delay and shared locks on one Redis', () => {
  const suite = redisSuite();

  it('a lock-delay longer than the place TTL: write locks handed over through the shared line are still taken (two lockers, 2 × 3 loops × 5 turns)', async () => {
    const clients = [connect(suite.server), connect(suite.server)];
    const stores = clients.map((client) => new RedisLockStore(client, { placeTtl: 300 }));
    const lockers = stores.map((store) => createLocker({ store, lockDelay: 1_000, ttl: 2_000, waitTimeout: 10_000 }));
    suite.closers.push(
      () => clients.forEach((client) => client.disconnect()),
      () => stores.forEach((store) => store.close()),
      () => Promise.all(lockers.map((locker) => locker.close())),
    );
    let inside = 0;
    let most = 0;
    const loop = async (index: number) => {
      for (let i = 0; i < 5; i++) {
        await lastValueFrom(
          lockers[index]!.usingWriteLock('hot', async () => {
            most = Math.max(most, ++inside);
            await firstValueFrom(timer(2));
            inside--;
          }),
        );
      }
    };
    await Promise.all([0, 1, 0, 1, 0, 1].map(loop));
    expect(most).toBe(1);
    // (a holder's key is kept ttl + lockDelay: 3 s, more than the test took)
    const holders = await suite.admin.keys('rxjs-lock:shared-holders:*');
    expect(await Promise.all(holders.map((key) => suite.admin.zcard(key)))).toEqual(holders.map(() => 0));
  });
});
