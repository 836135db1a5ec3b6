/**
 * Attacks on the Redis store's `replicaAcks` (WAIT) on a real master and replica: WAIT blocks the
 * store's connection, so what it costs the store's other calls (renewals of leases held on other
 * keys) while no replica acknowledges, and that every refused grant is given back.
 */
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isReplicaAckError, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { sharedKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { cutProxy } from '../support/cutProxy.js';
import type { ReplicatedPair } from '../support/replicatedPair.js';
import { replicatedPairSuite } from '../support/replicatedPairSuite.js';
import type { EmbeddedRedis } from '../support/redis.js';

const { pair, closers } = replicatedPairSuite();

function newProcess(servers: ReplicatedPair, server: EmbeddedRedis, options: RedisLockStoreOptions, ttl: number): { store: RedisLockStore; locker: Locker } {
  const store = new RedisLockStore(servers.client(server), options);
  const locker = createLocker({ store, ttl, commandTimeout: 10_000 });
  closers.push(async () => {
    await locker.close();
    store.close();
  });
  return { store, locker };
}

function hold(locker: Locker, key: string): { lease: Promise<Lease>; release: () => void; ended: Promise<unknown> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let gotLease!: (lease: Lease) => void;
  const lease = new Promise<Lease>((resolve) => (gotLease = resolve));
  const ended = lastValueFrom(
    locker.using(key, async (l) => {
      gotLease(l);
      await released;
      return 'done';
    }),
  ).catch((error: unknown) => error);
  closers.push(release);
  return { lease, release, ended };
}

describe('attack: replicaAcks while no replica acknowledges', () => {
  it('a burst of grants does not block the connection for one WAIT timeout each: a lease held on another key keeps renewing', async () => {
    const servers = await pair();
    const masterAdmin = servers.client(servers.master);
    // ttl 2 s (renewed every ~667 ms); each WAIT may block the connection for 200 ms
    const a = newProcess(servers, servers.master, { replicaAcks: { replicas: 1, timeout: 200 }, wakeUp: false }, 2_000);
    const holder = hold(a.locker, 'held');
    await holder.lease;
    servers.holdReplication();
    // 16 acquisitions of free keys at once: 16 grants, none acknowledged (16 × 200 ms one after
    // another would block the connection, and the holder's renewal behind them, for 3.2 s)
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        lastValueFrom(a.locker.using(`burst:${i}`, () => Promise.resolve('ran'), { waitTimeout: 0 })).catch((e: unknown) => e),
      ),
    );
    for (const outcome of outcomes) expect(isReplicaAckError(outcome), String(outcome)).toBe(true);
    expect(await masterAdmin.keys('burst:*')).toEqual([]);
    expect(await masterAdmin.keys('lock:burst:*')).toEqual([]);
    // the holder kept its lock through the burst
    expect((await holder.lease).held).toBe(true);
    holder.release();
    expect(await holder.ended).toBe('done');
  });

  it('the connection drops mid-WAIT (ioredis re-sends WAIT on the new connection, which answers at once): the grant is refused and given back', async () => {
    const servers = await pair();
    const masterAdmin = servers.client(servers.master);
    const storeClient = servers.client(servers.master);
    const store = new RedisLockStore(storeClient, { replicaAcks: { replicas: 1, timeout: 5_000 }, wakeUp: false });
    closers.push(() => store.close());
    servers.holdReplication();
    const outcome = store.tryAcquire('k', 'a', 60_000).then(
      (v) => v,
      (e: unknown) => e,
    );
    // the grant is written and WAIT blocks (the replica acknowledges nothing)
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await masterAdmin.get('k')).toBe('a');
    storeClient.disconnect(true);
    expect(await outcome).toBeInstanceOf(Error);
    // given back once the store's client is connected again (the TTL is 60 s: not a lapse)
    for (let i = 0; i < 100 && (await masterAdmin.get('k')) !== null; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await masterAdmin.get('k')).toBeNull();
  });
});

describe("attack: replicaAcks and a grant's call sent again on a new connection", () => {
  // The call is lost on its way (Redis never gets it) and the connection dropped: ioredis sends it
  // again once connected, and it grants there (the acquire script's common path: a bare fence,
  // confirmed by the epoch of the call). The connection closed between the grant's call and WAIT's
  // answer, which voids the answer (ReplicaAcks: the epoch is read before the call is sent): the
  // grant is given back and the acquisition fails, though the replica is in sync. (The rule is
  // conservative here: this grant was written on the new connection, so a WAIT there would cover
  // it. A store reading the epoch only once the reply came would confirm it, and these tests pin
  // the documented rule; a reply lost after the script ran instead makes the call sent again find
  // the key its own, a grant that is touched before WAIT whatever the epoch.)
  it.each(['tryAcquire', 'tryAcquireShared'] as const)('%s: refused and given back', async (method) => {
    const servers = await pair();
    const masterAdmin = servers.client(servers.master);
    const proxy = await cutProxy(servers.master.port);
    closers.push(() => proxy.close());
    const store = new RedisLockStore(servers.client(servers.master, { port: proxy.port }), { replicaAcks: { replicas: 1, timeout: 5_000 }, wakeUp: false });
    closers.push(() => store.close());
    const acquire = (key: string) => (method === 'tryAcquire' ? store.tryAcquire(key, 'a', 60_000) : store.tryAcquireShared(key, 'a', 60_000, 1, 1, 'leave'));
    const release = (key: string) => (method === 'tryAcquire' ? store.release(key, 'a') : store.releaseShared(key, 'a'));
    // (a first grant, acknowledged: the scripts are loaded, so the next call is one EVALSHA)
    expect(await acquire('warm')).toMatchObject({ acquired: true });
    expect(await release('warm')).toBe(true);
    const lost = proxy.loseNext('evalsha');
    const outcome = acquire('k').then(
      (v) => v,
      (e: unknown) => e,
    );
    await lost;
    proxy.cutAll();
    const refused = await outcome;
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/connection closed between the grant and WAIT/);
    // it was granted, on the new connection, and given back before the refusal
    // (the lock's own keys gone: a mutex's key, a shared lock's holders and permits)
    const held = method === 'tryAcquire' ? ['k'] : sharedKeys('k').slice(0, 2);
    expect(await masterAdmin.exists(...held)).toBe(0);
    // and the next call counts
    expect(await acquire('k')).toMatchObject({ acquired: true });
    expect(await release('k')).toBe(true);
  });
});
