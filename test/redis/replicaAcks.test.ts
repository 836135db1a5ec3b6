/**
 * Issue 13 part 3, replica acknowledgement, on a real master and replica started per test: a
 * failover can grant one lock twice (seed 003) — the master dies before its replica has the grant
 * (the replication link lags: see ../support/replicatedPair.ts),
 * the replica is promoted, and a second client takes the same key while the first still holds it.
 * The store's `replicaAcks` option (`WAIT`) refuses a grant no replica acknowledged, on every path
 * that grants a key, and gives the key back. Fencing tokens make the protected resource reject the
 * stale holder either way.
 */
import { Cluster, type Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockStoreError, isReplicaAckError, LockOptionsError, ReplicaAckError, type Locker } from '../../src/index.js';
import { FencedResource, RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { checkReplicaAcks, ReplicaAcks } from '../../src/backends/redis/ReplicaAcks.js';
import { MAX_MS } from '../../src/options/limits.js';
import { EPHEMERAL } from '../support/dataLossServers.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import type { ReplicatedPair } from '../support/replicatedPair.js';
import { replicatedPairSuite } from '../support/replicatedPairSuite.js';
import { eventually } from '../support/timing.js';
import { holdUntilReleased, type Holding } from '../support/holding.js';

/** A replica whose link is held back acknowledges nothing: 150 ms is enough to say so. */
const HELD_LINK_ACKS = { replicas: 1, timeout: 150 };

const { pair, closers } = replicatedPairSuite();
let resourceServer: EmbeddedRedis;
beforeAll(async () => {
  resourceServer = await EmbeddedRedis.start({ args: EPHEMERAL });
});
afterAll(async () => {
  await resourceServer?.stop();
});

/** A store on `server` and a locker on it (ttl 10 s: no lease lapses during a test), closed after the test. */
function newProcess(servers: ReplicatedPair, server: EmbeddedRedis, options: RedisLockStoreOptions = {}): { store: RedisLockStore; locker: Locker } {
  const store = new RedisLockStore(servers.client(server), options);
  const locker = createLocker({ store, ttl: 10_000, commandTimeout: 5_000 });
  closers.push(async () => {
    await locker.close();
    store.close();
  });
  return { store, locker };
}

/** Holds `key` until `release()` (see ../support/holding.ts), released after the test at the latest. */
function hold(locker: Locker, key: string): Holding {
  const holding = holdUntilReleased(locker, key);
  closers.push(holding.release);
  return holding;
}

/**
 * A store with `replicaAcks` (1 replica, 4 s) whose token `a` waits in line for `k` while `other`
 * (a store on the master's `redis` client) holds it as `x`, both with a 60 s TTL.
 */
async function waitingBehindHolder() {
  const servers = await pair();
  const redis = servers.client(servers.master);
  const other = new RedisLockStore(redis);
  const store = new RedisLockStore(servers.client(servers.master), { replicaAcks: { replicas: 1, timeout: 4000 }, wakeUp: false });
  closers.push(() => store.close());
  expect(await other.tryAcquire('k', 'x', 60_000)).toMatchObject({ acquired: true });
  expect(await store.tryAcquireInLine('k', 'a', 60_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
  return { servers, redis, other, store };
}

/**
 * A store with `replicaAcks` whose token `a` waits in line for `k` while another client holds it;
 * then the replication link is held back and the holder's release hands `k` to `a` (written by the
 * other client's connection).
 */
async function handedOverWhileReplicationHeld(): Promise<{ redis: Redis; store: RedisLockStore }> {
  const servers = await pair();
  const redis = servers.client(servers.master);
  const other = new RedisLockStore(redis);
  const storeClient = servers.client(servers.master);
  const store = new RedisLockStore(storeClient, { replicaAcks: HELD_LINK_ACKS, wakeUp: false });
  expect(await other.tryAcquire('k', 'x', 10_000)).toMatchObject({ acquired: true });
  expect(await store.tryAcquireInLine('k', 'a', 10_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
  // The replica acknowledged everything the store's connection wrote (its place in line): a WAIT
  // now answers 1 at once unless the store's connection writes again after the hand-off.
  expect(await storeClient.wait(1, 5000)).toBe(1);
  servers.holdReplication();
  expect(await other.release('k', 'x')).toBe(true);
  return { redis, store };
}

describe('a failover without replica acknowledgement', () => {
  it('grants one key to two holders at once, and the fences let the resource reject the stale one', async () => {
    const servers = await pair();
    const a = newProcess(servers, servers.master);
    servers.holdReplication();
    const holderA = hold(a.locker, 'invoice');
    const leaseA = await holderA.lease;

    await servers.failOver();
    const b = newProcess(servers, servers.replica);
    const holderB = hold(b.locker, 'invoice');
    const leaseB = await holderB.lease;

    // Two holders: A's lease has not ended (its renewals fail against a dead master, but its
    // deadline is seconds away) and B holds the same key on the promoted replica.
    expect(leaseA.held).toBe(true);
    expect(leaseB.held).toBe(true);
    expect(leaseB.key).toBe(leaseA.key);

    // B's fence is above A's (seeded from the promoted server's clock), so a fenced resource on
    // another server keeps B's write and refuses A's late one.
    expect(leaseB.fence).toBeGreaterThan(leaseA.fence);
    const report = new FencedResource(servers.client(resourceServer), 'report:invoice');
    expect(await report.write(leaseB.fence, 'by B')).toEqual({ accepted: true, fence: leaseB.fence });
    expect(await report.write(leaseA.fence, 'by A')).toEqual({ accepted: false, highestFence: leaseB.fence });
    expect(await report.read()).toEqual({ fence: leaseB.fence, value: 'by B' });

    holderB.release();
    expect(await holderB.ended).toBe('done');
    holderA.release();
    // A cannot give back a key on a dead master: its stream ends (with its work's value, or the
    // loss if a renewal deadline passed first), never with an uncaught error.
    const endA = await holderA.ended;
    expect(endA === 'done' || (endA as Error).name === 'LockLostError').toBe(true);
  });
});

describe('replicaAcks', () => {
  it('refuses the grant in the same setup: typed error on the stream, lock released on the master, one holder after the failover', async () => {
    const servers = await pair();
    const a = newProcess(servers, servers.master, { replicaAcks: HELD_LINK_ACKS });
    const masterAdmin = servers.client(servers.master);
    servers.holdReplication();

    const error = await lastValueFrom(a.locker.using('invoice', () => Promise.resolve('ran'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicaAckError);
    expect(isReplicaAckError(error) && isLockStoreError(error)).toBe(true);
    expect(error).toMatchObject({ name: 'ReplicaAckError', key: 'invoice', operation: 'acquire', acknowledged: 0, replicas: 1, timeoutMs: 150 });
    expect((error as Error).message).toContain('0 of 1 replica acknowledged the grant within 150 ms');
    expect(await masterAdmin.get('lock:invoice')).toBeNull();
    await eventually(async () => (await masterAdmin.keys('*')).length === 0, 5000, 20);

    await servers.failOver();
    const b = newProcess(servers, servers.replica);
    const holderB = hold(b.locker, 'invoice');
    expect((await holderB.lease).held).toBe(true);
  });

  it('counts a grant once the replica has it: the replica holds the key when the lease is given', async () => {
    const servers = await pair();
    const a = newProcess(servers, servers.master, { replicaAcks: { replicas: 1, timeout: 4000 } });
    const replicaClient = servers.client(servers.replica);
    const seen = await lastValueFrom(a.locker.using('invoice', async (lease) => [lease.token, await replicaClient.get('lock:invoice')]));
    expect(seen[1]).toBe(seen[0]);
  });

  it('refuses a key handed over by a release, found by a later attempt in line', async () => {
    const { redis, store } = await handedOverWhileReplicationHeld();
    expect(await redis.get('k')).toBe('a'); // handed to a by the release (written by another connection)

    const error = await store.tryAcquireInLine('k', 'a', 10_000, 1, 'keep').catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ReplicaAckError', key: 'k', operation: 'acquire', acknowledged: 0, replicas: 1 });
    expect(await redis.get('k')).toBeNull();
  });

  it('refuses a key handed over by a release, found by leave', async () => {
    const { redis, store } = await handedOverWhileReplicationHeld();

    const error = await store.leave('k', 'a').catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ReplicaAckError', key: 'k', operation: 'leave', acknowledged: 0 });
    expect(await redis.get('k')).toBeNull();
  });

  it('refuses a hand-off announced by pub/sub: the waiter asks the store instead of taking the signal', async () => {
    const servers = await pair();
    const masterAdmin = servers.client(servers.master);
    const x = newProcess(servers, servers.master);
    const a = newProcess(servers, servers.master, { replicaAcks: HELD_LINK_ACKS });
    const holderX = hold(x.locker, 'hot');
    await holderX.lease;
    // A waits in the store's line (polling only every 5 s: its grant can only come by signal).
    const waiting = lastValueFrom(a.locker.using('hot', () => Promise.resolve('ran'), { retry: { minDelay: 5000, jitter: 0 }, waitTimeout: 20_000 })).catch(
      (e: unknown) => e,
    );
    await eventually(async () => (await masterAdmin.zcard(helperKey('lock:hot', 'line'))) === 1, 10_000, 20);
    servers.holdReplication();
    holderX.release();
    expect(await holderX.ended).toBe('done');

    expect(await waiting).toMatchObject({ name: 'ReplicaAckError', key: 'hot', acknowledged: 0 });
    expect(await masterAdmin.get('lock:hot')).toBeNull();
  });

  it('refuses the direct tryAcquire of a store used without a locker, and gives the key back', async () => {
    const servers = await pair();
    const redis = servers.client(servers.master);
    const store = new RedisLockStore(servers.client(servers.master), { replicaAcks: HELD_LINK_ACKS });
    servers.holdReplication();
    const error = await store.tryAcquire('k', 'a', 10_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicaAckError);
    expect(await redis.get('k')).toBeNull();
  });

  it('a grant by its own call costs the acquire script and one WAIT: nothing is touched', async () => {
    const servers = await pair();
    const master = servers.client(servers.master);
    const store = new RedisLockStore(servers.client(servers.master), { replicaAcks: { replicas: 1, timeout: 4000 }, wakeUp: false });
    closers.push(() => store.close());
    // (once first, so the script is loaded and called by SHA below)
    expect(await store.tryAcquire('warm', 'w', 10_000)).toMatchObject({ acquired: true });
    await master.config('RESETSTAT');
    expect(await store.tryAcquire('k', 'a', 10_000)).toMatchObject({ acquired: true });
    const stats = await master.info('commandstats');
    const calls = (command: string) => Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
    expect({ evalsha: calls('evalsha'), eval: calls('eval'), wait: calls('wait') }).toEqual({ evalsha: 1, eval: 0, wait: 1 });
  });

  it('a key found handed over is touched with the TTL it has left (not lengthened to the caller’s ttl), then counted', async () => {
    const { servers, redis, other, store } = await waitingBehindHolder();
    expect(await other.release('k', 'x')).toBe(true); // hands k to a until its place would have lapsed (3 s)
    const result = await store.tryAcquireInLine('k', 'a', 60_000, 1, 'keep');
    if (!result.acquired) throw new Error('expected the key handed over');
    expect(result.ttl).toBeLessThanOrEqual(3000);
    expect(await redis.pttl('k')).toBeLessThanOrEqual(result.ttl!);
    expect(await servers.client(servers.replica).get('k')).toBe('a');
  });

  it('leave: without a grant answers not granted (nothing to confirm); a key handed over is touched with the TTL it has left', async () => {
    const { servers, redis, other, store } = await waitingBehindHolder();
    expect(await store.leave('k', 'a')).toEqual({ granted: false });
    expect(await redis.get('k')).toBe('x');
    // handed over by the release: taken by leave, confirmed, its TTL not lengthened to the caller's
    expect(await store.tryAcquireInLine('k', 'a', 60_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
    expect(await other.release('k', 'x')).toBe(true);
    const left = await store.leave('k', 'a');
    expect(left).toMatchObject({ granted: true });
    const ttl = (left as { ttl: number }).ttl;
    expect(ttl).toBeLessThanOrEqual(3000);
    expect(await redis.pttl('k')).toBeLessThanOrEqual(ttl);
    expect(await servers.client(servers.replica).get('k')).toBe('a');
  });

  it('is checked when the store is made: values, and no Cluster client', () => {
    const redis = connect(resourceServer, { lazyConnect: true });
    closers.push(() => redis.disconnect());
    const bad: Array<[unknown, string]> = [
      [5, 'replicaAcks'],
      [[1, 10], 'replicaAcks'],
      [{ replicas: 0, timeout: 10 }, 'replicaAcks.replicas'],
      [{ replicas: 1.5, timeout: 10 }, 'replicaAcks.replicas'],
      [{ replicas: 2 ** 31, timeout: 10 }, 'replicaAcks.replicas'],
      [{ replicas: 1, timeout: 0 }, 'replicaAcks.timeout'],
      [{ replicas: 1, timeout: 1.5 }, 'replicaAcks.timeout'],
      [{ replicas: 1, timeout: 2 ** 31 }, 'replicaAcks.timeout'],
      [{ replicas: 1 }, 'replicaAcks.timeout'],
      [{ replicas: 1, timeout: 10, wait: true }, 'replicaAcks.wait'],
    ];
    for (const [replicaAcks, option] of bad) {
      let thrown: unknown;
      try {
        new RedisLockStore(redis, { replicaAcks } as RedisLockStoreOptions);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(replicaAcks)).toBeInstanceOf(LockOptionsError);
      expect((thrown as LockOptionsError).option).toBe(option);
    }
    const cluster = new Cluster([{ host: '127.0.0.1', port: resourceServer.port }], { lazyConnect: true });
    closers.push(() => cluster.disconnect());
    expect(() => new RedisLockStore(cluster, { replicaAcks: { replicas: 1, timeout: 10 } })).toThrow(/no replicaAcks with a Cluster client/);
    // the bounds themselves are accepted
    new RedisLockStore(redis, { replicaAcks: { replicas: 1, timeout: 1 } }).close();
    new RedisLockStore(redis, { replicaAcks: { replicas: MAX_MS, timeout: MAX_MS } }).close();
    // a client without WAIT or without connection events (not an ioredis Redis) is refused
    for (const missing of ['wait', 'on', 'off'] as const) {
      const client = new Proxy(redis, { get: (target, property, receiver) => (property === missing ? undefined : Reflect.get(target, property, receiver)) });
      expect(() => checkReplicaAcks({ replicas: 1, timeout: 10 }, client), missing).toThrow(LockOptionsError);
    }
    // (a store without the option adds no listener to the client)
    const before = redis.listenerCount('close');
    new RedisLockStore(redis).close();
    expect(redis.listenerCount('close')).toBe(before);
    const store = new RedisLockStore(redis, { replicaAcks: { replicas: 1, timeout: 10 } });
    expect(redis.listenerCount('close')).toBe(before + 1);
    store.close();
    expect(redis.listenerCount('close')).toBe(before);
  });
});

/**
 * ReplicaAcks on its own, on a replica that acknowledges everything at once (replication not held
 * back): what `confirm` must refuse although `WAIT` answers enough replicas — a grant written on a
 * connection that closed before `WAIT` (a `WAIT` on the new connection covers nothing of the old
 * one's), a key handed over whose touch found it gone or whose connection closed after the touch
 * — and that a refused grant is given back before the refusal is told.
 */
describe('ReplicaAcks.confirm', () => {
  async function confirming() {
    const servers = await pair();
    const client = servers.client(servers.master);
    await client.ping();
    const acks = new ReplicaAcks(client, { replicas: 1, timeout: 5_000 });
    closers.push(() => acks.close());
    const givenBack: string[] = [];
    const giveBack = (key: string) => () => {
      givenBack.push(key);
      return client.del(key);
    };
    /** Closes the client's connection and resolves once it is connected again. */
    const reconnect = async () => {
      const ready = new Promise((resolve) => client.once('ready', resolve));
      client.disconnect(true);
      await ready;
    };
    return { client, acks, givenBack, giveBack, reconnect };
  }

  it('counts a grant written on the connection (WAIT answers the replica); none is given back', async () => {
    const { client, acks, givenBack, giveBack } = await confirming();
    const epoch = acks.epoch;
    await client.set('k', 'a');
    await acks.confirm('k', 'acquire', { epoch }, giveBack('k'));
    expect(givenBack).toEqual([]);
    expect(await client.get('k')).toBe('a');
  });

  it('refuses a grant whose connection closed before WAIT, though WAIT on the new connection counts the replica, and gives it back', async () => {
    const { client, acks, givenBack, giveBack, reconnect } = await confirming();
    const epoch = acks.epoch;
    await client.set('k', 'a'); // the grant, on the first connection
    await reconnect();
    expect(await client.wait(1, 5_000)).toBe(1); // a new connection: nothing of its own to wait for
    const error = await acks.confirm('k', 'acquire', { epoch }, giveBack('k')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/connection closed between the grant and WAIT/);
    expect(givenBack).toEqual(['k']);
    expect(await client.get('k')).toBeNull();
  });

  it('a key handed over is touched first: its touch is what WAIT counts', async () => {
    const { client, acks, givenBack, giveBack } = await confirming();
    let touches = 0;
    const touch = async () => {
      touches++;
      return (await client.pexpire('k', 60_000)) === 1 ? ('extended' as const) : ('gone' as const);
    };
    await client.set('k', 'a');
    await acks.confirm('k', 'leave', { touch }, giveBack('k'));
    expect(touches).toBe(1);
    expect(givenBack).toEqual([]);
  });

  it('refuses a key handed over whose touch found it gone, and gives it back', async () => {
    const { acks, givenBack, giveBack } = await confirming();
    const error = await acks.confirm('k', 'leave', { touch: () => Promise.resolve('gone' as const) }, giveBack('k')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/the key handed over was gone/);
    expect(givenBack).toEqual(['k']);
  });

  it('refuses a key handed over whose connection closed after the touch, before WAIT', async () => {
    const { client, acks, givenBack, giveBack, reconnect } = await confirming();
    await client.set('k', 'a');
    const touch = async () => {
      const touched = await client.pexpire('k', 60_000);
      await reconnect(); // the touch's write was on the connection that closed
      return touched === 1 ? ('extended' as const) : ('gone' as const);
    };
    const error = await acks.confirm('k', 'acquire', { touch }, giveBack('k')).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/connection closed between the grant and WAIT/);
    expect(givenBack).toEqual(['k']);
  });

  it('tells the refusal only once the key is given back, however slow that is; a give-back that fails does not replace the refusal', async () => {
    const { client, acks } = await confirming();
    await client.set('k', 'a');
    const slowGiveBack = async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await client.del('k');
    };
    const refused = await acks.confirm('k', 'leave', { touch: () => Promise.resolve('gone' as const) }, slowGiveBack).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/gone/);
    expect(await client.get('k')).toBeNull();
    const failing = await acks
      .confirm('k', 'leave', { touch: () => Promise.resolve('gone' as const) }, () => Promise.reject(new Error('give-back failed')))
      .catch((e: unknown) => e);
    expect((failing as Error).message).toMatch(/gone/);
  });
  it("a burst of grants answered together costs two WAITs (the first grant's, and one after it shared by the rest), burst after burst; each counts only a WAIT sent after its answer", async () => {
    const servers = await pair();
    const client = servers.client(servers.master);
    await client.ping();
    const acks = new ReplicaAcks(client, { replicas: 1, timeout: 150 });
    closers.push(() => acks.close());
    const waits = async () => Number(/^cmdstat_wait:calls=(\d+)/m.exec(await client.info('commandstats'))?.[1] ?? 0);
    /** Four grants written in one go (answered together), each confirmed on its answer. */
    const burst = (round: number) => {
      const epoch = acks.epoch;
      return Promise.all(
        [0, 1, 2, 3].map((i) =>
          client.set(`k${round}:${i}`, 'a').then(() =>
            acks
              .confirm(`k${round}:${i}`, 'acquire', { epoch }, () => client.del(`k${round}:${i}`))
              .then(
                () => 'confirmed',
                (e: unknown) => (e as Error).name,
              ),
          ),
        ),
      );
    };
    expect(await burst(1)).toEqual(['confirmed', 'confirmed', 'confirmed', 'confirmed']);
    expect(await waits()).toBe(2);
    // the replica acknowledges nothing from now on: no grant of the next burst may count a WAIT of the first
    servers.holdReplication();
    expect(await burst(2)).toEqual(['ReplicaAckError', 'ReplicaAckError', 'ReplicaAckError', 'ReplicaAckError']);
    expect(await waits()).toBe(4);
    expect(await client.keys('k2:*')).toEqual([]);
  });
});
