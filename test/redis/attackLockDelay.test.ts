/**
 * Attacks on lock-delay (`lockDelay`) on real Redis: a quorum store whose measured validity the
 * delay leaves little or nothing of (3 nodes).
 */
import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { quorumNodes } from '../support/quorumNodes.js';

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
      expect(events).toEqual(['acquired', 'released']);
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
