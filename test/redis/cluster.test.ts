/**
 * The Redis store on a real 3-master Redis Cluster: locks on keys spread over every node, and
 * release by SHA recovering from an empty script cache on the node that owns the key.
 */
import type { Cluster, Redis } from 'ioredis';
import { firstValueFrom, forkJoin } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { lockKeyCount } from '../support/lockKeys.js';

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let nodes: Redis[];
let locker: Locker;

beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  client = cluster.connect();
  nodes = cluster.nodeClients();
  locker = createLocker({ store: new RedisLockStore(client) });
});
afterAll(async () => {
  client?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

const keysPerNode = () => Promise.all(nodes.map((node) => lockKeyCount(node)));

describe('RedisLockStore on a Redis Cluster', () => {
  it('holds and releases locks whose keys live on every node', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `order:${i}`);
    const leases = await firstValueFrom(forkJoin(keys.map((key) => locker.acquire(key))));
    const spread = await keysPerNode();
    expect(spread.reduce((a, b) => a + b, 0)).toBe(30);
    expect(spread.every((count) => count > 0)).toBe(true);
    expect(await Promise.all(leases.map((lease) => lease.release()))).toEqual(keys.map(() => true));
    expect(await keysPerNode()).toEqual([0, 0, 0]);
  });

  it("releases by SHA after every node's script cache was flushed", async () => {
    const leases = await firstValueFrom(forkJoin(['a', 'b', 'c', 'd', 'e', 'f'].map((key) => locker.acquire(key))));
    await Promise.all(nodes.map((node) => node.script('FLUSH')));
    expect(await Promise.all(leases.map((lease) => lease.release()))).toEqual(leases.map(() => true));
    expect(await keysPerNode()).toEqual([0, 0, 0]);
  });
});
