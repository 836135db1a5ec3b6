/**
 * The Redis store's `replicaAcks` on shared locks (semaphores, read-write locks), on a real master
 * and replica started per test: a grant of permits counts only once a replica acknowledged it, as
 * a mutex's does — on every path that grants: taken by the caller's own call, found granted from
 * the line (written by another client's release, so touched first), and announced by pub/sub
 * (the waiter asks the store, which confirms). Otherwise the permits are given back and the
 * acquisition fails with `ReplicaAckError`.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, ReplicaAckError } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import type { ReplicatedPair } from '../support/replicatedPair.js';
import { replicatedPairSuite } from '../support/replicatedPairSuite.js';
import { eventually } from '../support/timing.js';

/** A replica whose link is held back acknowledges nothing: 150 ms is enough to say so. */
const HELD_LINK_ACKS = { replicas: 1, timeout: 150 };

const { pair, closers } = replicatedPairSuite();

function newStore(servers: ReplicatedPair, options: RedisLockStoreOptions = {}): RedisLockStore {
  const store = new RedisLockStore(servers.client(servers.master), options);
  closers.push(() => store.close());
  return store;
}

/** The whole capacity of `key` (2) can be taken at once by another client: nothing was kept. */
async function allFree(store: RedisLockStore, key: string): Promise<boolean> {
  const all = await store.tryAcquireShared(key, 'probe', 1_000, 2, 2, 'leave');
  if (all.acquired) await store.releaseShared(key, 'probe');
  return all.acquired;
}

describe('replicaAcks on shared locks', () => {
  it('counts a grant of permits once the replica has it', async () => {
    const servers = await pair();
    const store = newStore(servers, { replicaAcks: { replicas: 1, timeout: 4_000 } });
    const locker = createLocker({ store, ttl: 10_000 });
    closers.push(() => locker.close());
    const lease = await firstValueFrom(locker.acquirePermit('sem', { limit: 2 }));
    const replica = servers.client(servers.replica);
    expect(await replica.zscore(helperKey('lock:sem', 'shared-holders'), lease.token)).not.toBeNull();
    await lease.release();
  });

  it("permits taken by the caller's own call cost the acquire script and one WAIT: nothing is touched", async () => {
    const servers = await pair();
    const master = servers.client(servers.master);
    const store = newStore(servers, { replicaAcks: { replicas: 1, timeout: 4_000 }, wakeUp: false });
    // (once first, so the script is loaded and called by SHA below)
    expect(await store.tryAcquireShared('lock:warm', 'w', 10_000, 1, 2, 'leave')).toMatchObject({ acquired: true });
    await master.config('RESETSTAT');
    expect(await store.tryAcquireShared('lock:sem', 'a', 10_000, 1, 2, 'leave')).toMatchObject({ acquired: true });
    const stats = await master.info('commandstats');
    const calls = (command: string) => Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
    expect({ evalsha: calls('evalsha'), eval: calls('eval'), wait: calls('wait') }).toEqual({ evalsha: 1, eval: 0, wait: 1 });
  });

  it('permits granted from the line are touched with the TTL they have left (not lengthened to the caller’s ttl), then counted', async () => {
    const servers = await pair();
    const other = newStore(servers);
    const store = newStore(servers, { replicaAcks: { replicas: 1, timeout: 4_000 }, wakeUp: false });
    const admin = servers.client(servers.master);
    expect(await other.tryAcquireShared('lock:s', 'x', 60_000, 2, 2, 'keep')).toMatchObject({ acquired: true });
    expect(await store.tryAcquireShared('lock:s', 'a', 60_000, 1, 2, 'keep')).toMatchObject({ acquired: false, queued: true });
    expect(await other.releaseShared('lock:s', 'x')).toBe(true); // grants 'a' until its place would have lapsed (3 s)
    const result = await store.tryAcquireShared('lock:s', 'a', 60_000, 1, 2, 'keep');
    if (!result.acquired) throw new Error('expected the permits granted from the line');
    expect(result.ttl).toBeLessThanOrEqual(3_000);
    const endsAt = Number(await admin.zscore(helperKey('lock:s', 'shared-holders'), 'a'));
    const [seconds, micros] = await admin.time();
    // (the touch adds one ms, so that it changes the lease's end and replicates)
    expect(endsAt - (Number(seconds) * 1000 + Number(micros) / 1000)).toBeLessThanOrEqual(result.ttl! + 1);
    expect(await servers.client(servers.replica).zscore(helperKey('lock:s', 'shared-holders'), 'a')).not.toBeNull();
  });

  it("refuses permits taken by the caller's own call, and gives them back", async () => {
    const servers = await pair();
    const store = newStore(servers, { replicaAcks: HELD_LINK_ACKS });
    const locker = createLocker({ store, ttl: 10_000 });
    closers.push(() => locker.close());
    servers.holdReplication();
    const error = await firstValueFrom(locker.acquirePermit('sem', { limit: 2 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicaAckError);
    expect(error).toMatchObject({ key: 'sem', operation: 'acquire', acknowledged: 0, replicas: 1 });
    expect(await allFree(newStore(servers), 'lock:sem')).toBe(true);
  });

  it('refuses permits granted from the line by another client, found by a later attempt', async () => {
    const servers = await pair();
    const other = newStore(servers);
    const storeClient = servers.client(servers.master);
    const store = new RedisLockStore(storeClient, { replicaAcks: HELD_LINK_ACKS, wakeUp: false });
    closers.push(() => store.close());
    expect(await other.tryAcquireShared('lock:s', 'x', 10_000, 2, 2, 'keep')).toMatchObject({ acquired: true });
    expect(await store.tryAcquireShared('lock:s', 'a', 10_000, 1, 2, 'keep')).toMatchObject({ acquired: false, queued: true });
    // the replica acknowledged every write of the store's connection (its place in line)
    expect(await storeClient.wait(1, 5_000)).toBe(1);
    servers.holdReplication();
    expect(await other.releaseShared('lock:s', 'x')).toBe(true); // grants 'a', written by other's connection

    const error = await store.tryAcquireShared('lock:s', 'a', 10_000, 1, 2, 'keep').catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ReplicaAckError', key: 'lock:s', operation: 'acquire', acknowledged: 0 });
    expect(await allFree(other, 'lock:s')).toBe(true);
  });

  it('refuses a grant announced by pub/sub: the waiter asks the store, which confirms', async () => {
    const servers = await pair();
    const other = newStore(servers);
    const store = newStore(servers, { replicaAcks: HELD_LINK_ACKS });
    const locker = createLocker({ store, ttl: 10_000 });
    closers.push(() => locker.close());
    expect(await other.tryAcquireShared('lock:rw', 'x', 10_000, 2, 2, 'keep')).toMatchObject({ acquired: true });
    // polling only every 5 s: the grant can only come by signal
    const waiting = firstValueFrom(locker.acquirePermit('rw', { limit: 2, retry: { minDelay: 5_000, jitter: 0 }, waitTimeout: 20_000 })).catch(
      (e: unknown) => e,
    );
    const admin = servers.client(servers.master);
    await eventually(async () => (await admin.zcard(helperKey('lock:rw', 'shared-line'))) === 1, 10_000, 20);
    servers.holdReplication();
    expect(await other.releaseShared('lock:rw', 'x')).toBe(true);

    expect(await waiting).toMatchObject({ name: 'ReplicaAckError', key: 'rw', acknowledged: 0 });
    expect(await allFree(other, 'lock:rw')).toBe(true);
  });
});
