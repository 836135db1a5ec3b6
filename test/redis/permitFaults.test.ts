/**
 * Semaphores and read-write locks on a real Redis that fails: data lost while permits are held
 * (FLUSHALL, a restart without persistence), a frozen server (SIGSTOP), and wake-ups. Holders that
 * lost their permits hear of it as `LockLostError`; once they have, the live holders never exceed
 * the limit, and fences keep growing across the loss. Also: the quorum store refuses shared locks.
 */
import { firstValueFrom, lastValueFrom, NEVER, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockCapabilityError, isLockLostError, isLockStoreError, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, RedlockStore } from '../../src/redis.js';
import { EPHEMERAL } from '../support/dataLossServers.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite({ args: EPHEMERAL });

/** A locker on its own connection, closed after the test. */
function newLocker(options: Parameters<typeof createLocker>[0] = {}): { locker: Locker; store: RedisLockStore } {
  const client = connect(suite.server, { maxRetriesPerRequest: null });
  const store = new RedisLockStore(client);
  const locker = createLocker({ store, retry: { minDelay: 2, jitter: 4 }, ...options });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return { locker, store };
}

/** Holds `n` permits of `limit` on `key` until lost; resolves with each hold's stream error. */
function holdPermits(locker: Locker, key: string, n: number, limit: number, ttl: number): { ended: Promise<unknown[]>; fences: number[] } {
  const fences: number[] = [];
  const ended = Promise.all(
    Array.from({ length: n }, () =>
      lastValueFrom(locker.usingPermit(key, (lease) => (fences.push(lease.fence), NEVER), { limit, ttl })).catch((e: unknown) => e),
    ),
  );
  return { ended, fences };
}

describe.each([
  ['FLUSHALL', async () => void (await suite.admin.flushall())],
  [
    'a restart without persistence',
    async () => {
      await suite.server.kill();
      await suite.server.restart();
      await eventually(async () => (await suite.admin.ping().catch(() => 'down')) === 'PONG', 5_000);
    },
  ],
])('permits held while Redis loses its data (%s)', (_, loseData) => {
  it('the holders lose them as LockLostError; then the live holders never exceed the limit, with higher fences', async () => {
    // (a TTL that outlasts a restart on a loaded machine: a holder whose renewals find no server
    // until its deadline passed loses its permits as 'store-unreachable', not 'expired')
    const a = newLocker({ ttl: 2_000 });
    const b = newLocker({ ttl: 2_000 });
    const old = holdPermits(a.locker, 'lost', 2, 2, 2_000);
    await eventually(() => old.fences.length === 2);
    await loseData();
    // the store forgot them: another process takes both permits at once
    const fresh: Lease[] = [];
    for (let i = 0; i < 2; i++) fresh.push(await firstValueFrom(b.locker.acquirePermit('lost', { limit: 2, waitTimeout: 2_000 })));
    const errors = await old.ended; // at their next renewal (ttl / 3)
    expect(errors.every(isLockLostError)).toBe(true);
    expect(errors).toMatchObject([{ reason: 'expired' }, { reason: 'expired' }]);
    // from here the live holders are b's two: a third must wait
    const third = await firstValueFrom(a.locker.acquirePermit('lost', { limit: 2, waitTimeout: 100 })).catch((e: unknown) => e);
    expect(third).toMatchObject({ name: 'LockTimeoutError' });
    expect(fresh.every((lease) => lease.held)).toBe(true);
    expect(Math.min(...fresh.map((l) => l.fence))).toBeGreaterThan(Math.max(...old.fences));
    for (const lease of fresh) expect(await lease.release()).toBe(true);
  });
});

describe('a frozen Redis (SIGSTOP) with permits held and waited for', () => {
  it('holders lose theirs as store-unreachable, waiters fail with LockStoreError, and nothing is left once it thaws', async () => {
    // (a TTL whose renewals keep the permit through a few hundred ms in which a loaded machine does
    // not run the process: a holder whose deadline passed before the freeze loses it as 'expired')
    const { locker } = newLocker({ ttl: 1_200, commandTimeout: 150 });
    const held = holdPermits(locker, 'frozen', 1, 1, 1_200);
    await eventually(() => held.fences.length === 1);
    const reader = await firstValueFrom(locker.acquireReadLock('frozen-rw'));
    const waiter = firstValueFrom(locker.acquireWriteLock('frozen-rw', { waitTimeout: 5_000 }));
    await sleep(20); // the writer waits in line behind the reader
    suite.server.pause();
    let errors: unknown[];
    let waited: unknown;
    try {
      [errors, waited] = await Promise.all([held.ended, waiter.catch((e: unknown) => e)]);
    } finally {
      suite.server.resume();
    }
    expect(errors).toMatchObject([{ name: 'LockLostError', reason: 'store-unreachable' }]);
    expect(isLockStoreError(waited)).toBe(true);
    await reader.release();
    // once thawed: the permit and the line are free again (the dead ones ended with their TTLs)
    const again = await firstValueFrom(locker.acquirePermit('frozen', { limit: 1, waitTimeout: 3_000 }));
    const writer = await firstValueFrom(locker.acquireWriteLock('frozen-rw', { waitTimeout: 3_000 }));
    await again.release();
    await writer.release();
    await eventually(async () => (await suite.admin.keys('*')).length === 0, 3_000);
  });
});

describe('wake-ups', () => {
  it('a release grants the next waiter of another process through the line and wakes it', async () => {
    const a = newLocker();
    const b = newLocker({ retry: { minDelay: 5_000, jitter: 0 } }); // polls too slowly to matter
    const held = await firstValueFrom(a.locker.acquireWriteLock('wake'));
    const started = performance.now();
    const waiting = firstValueFrom(b.locker.acquireReadLock('wake', { waitTimeout: 4_000 }));
    await sleep(50);
    await held.release();
    const lease = await waiting;
    // woken, not polled: in line with a live channel, a waiter only refreshes its place every
    // 750–1000 ms (a quarter to a third of the 3 s place TTL), and its back-off is 5 s
    expect(performance.now() - started).toBeLessThan(600);
    await lease.release();
    await lastValueFrom(timer(0));
  });
});

describe('the quorum store', () => {
  it('has no shared locks: the locker answers LockCapabilityError', async () => {
    const client = connect(suite.server);
    suite.closers.push(() => client.disconnect());
    const locker = createLocker({ store: new RedlockStore([client]) });
    suite.closers.push(() => locker.close());
    for (const lease$ of [locker.acquirePermit('q', { limit: 2 }), locker.acquireReadLock('q'), locker.acquireWriteLock('q')]) {
      const error = await firstValueFrom(lease$).catch((e: unknown) => e);
      expect(isLockCapabilityError(error)).toBe(true);
      expect(String((error as Error).message)).toMatch(/quorum/);
    }
  });
});
