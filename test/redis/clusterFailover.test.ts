/**
 * A master failing over on a real Redis Cluster (3 masters, the first with a replica, a 2 s node
 * timeout): while three lockers contend for keys on every master, the first master is killed
 * (SIGKILL) and the cluster promotes its replica. Promise: every failure meanwhile reaches its
 * stream as a typed lock error (none is thrown elsewhere, no unhandled rejection), and afterwards
 * the lockers take, hand off (woken over the promoted node's shard channels) and release keys of
 * the failed-over slots as before. (Not promised: exclusion across the failover itself. The
 * replica may not have the last grants; see the README on replica acknowledgement.)
 */
import type { Cluster, Redis } from 'ioredis';
import { Redis as RedisClient } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockError, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { contend } from '../support/clusterContention.js';
import { addressOf, keysOnEachNode, storeKeyOf } from '../support/clusterNodes.js';
import { eventually } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

let cluster: EmbeddedRedisCluster;
let clients: Cluster[];
let stores: RedisLockStore[];
let lockers: Locker[];
let nodes: Redis[];
let replica: Redis;

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3, { replicas: 1, nodeTimeout: 2000 });
  clients = [0, 1, 2].map(() => cluster.connect());
  await Promise.all(clients.map((client) => new Promise((resolve) => client.once('ready', resolve))));
  stores = clients.map((client) => new RedisLockStore(client, { placeTtl: 1000 }));
  lockers = stores.map((store) => createLocker({ store, ttl: 3000, waitTimeout: 5000, commandTimeout: 1000 }));
  nodes = cluster.nodeClients();
  nodes.forEach((node) => node.on('error', () => undefined));
  const [replicaNode] = cluster.replicas;
  replica = new RedisClient({ host: replicaNode!.host, port: replicaNode!.port });
}, 90_000);
afterAll(async () => {
  await Promise.all((lockers ?? []).map((locker) => locker.close()));
  stores?.forEach((store) => store.close());
  clients?.forEach((client) => client.disconnect());
  nodes?.forEach((node) => node.disconnect());
  replica?.disconnect();
  await cluster?.stop();
});

describe('a master failing over on a Redis Cluster', () => {
  it('keeps the lockers working after the replica is promoted; failures meanwhile are typed', async () => {
    const onEach = keysOnEachNode(clients[0]!, nodes, 'failover:');
    const keys = [...onEach, ...keysOnEachNode(clients[0]!, nodes, 'other:')];
    // a wake-up watch for a key of the master about to fail: it must say it went down (its waiters
    // poll meanwhile) and come back once ioredis subscribed it on the promoted node
    const statuses: string[] = [];
    const watch = stores[2]!.watch!(storeKeyOf(onEach[0]!), 'watcher', (signal) => statuses.push(signal.type));
    await watch.ready;
    const run = contend(lockers, keys);
    try {
      await eventually(() => run.wins >= 30, 30_000, 10);
      await cluster.nodes[0]!.kill();
      await eventually(async () => ((await replica.call('ROLE')) as [string])[0] === 'master', 60_000, 100);
      run.mark();
      await eventually(() => run.winsSinceMark >= 60, 60_000, 20);
    } finally {
      await run.stop();
    }
    for (const error of run.errors) expect(isLockError(error), String(error)).toBe(true);
    expect(statuses).toContain('interrupted');
    await eventually(() => watch.active, 20_000, 20);
    expect(statuses.at(-1)).toBe('resumed');
    expect(((await replica.call('PUBSUB', 'SHARDCHANNELS', '*')) as string[]).some((channel) => channel.includes(storeKeyOf(onEach[0]!)))).toBe(true);
    watch.stop();
    // every locker takes a key of the failed-over slots, now on the promoted replica
    const failedOver = onEach[0]!;
    for (const locker of lockers) {
      const lease = await firstValueFrom(locker.acquire(failedOver));
      expect(await replica.get(storeKeyOf(failedOver))).toBe(lease.token);
      expect(await lease.release()).toBe(true);
    }
    // a hand-off there wakes its waiter over the promoted node's shard channel
    const holding = await firstValueFrom(lockers[0]!.acquire(failedOver));
    const waiting = firstValueFrom(lockers[1]!.acquire(failedOver));
    await eventually(
      async () => ((await replica.call('PUBSUB', 'SHARDCHANNELS', '*')) as string[]).some((channel) => channel.includes(failedOver)),
      20_000,
      20,
    );
    await holding.release();
    expect(await (await waiting).release()).toBe(true);
    console.info(
      `failover under contention: ${run.wins} sections (${run.winsSinceMark} after the promotion), most holders at once ${run.maxInside}, ` +
        `${run.errors.length} typed failures (${[...new Set(run.errors.map((e) => (e as Error).name))].join(', ')}); promoted ${addressOf(replica)}`,
    );
  }, 180_000);
});
