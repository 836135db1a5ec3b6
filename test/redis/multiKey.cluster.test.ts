/**
 * Multi-key locks on a real 3-master Redis Cluster: the multi-key contract (keys of a set land on
 * different nodes), and a set with one key on each node — taken one after the other in lock order
 * (one store round trip per key, no multi-slot script), each held on its own node.
 */
import type { Cluster, Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { multiKeyContract } from '../contract/multiKeyContract.js';
import { keysOnEachNode, storeKeyOf } from '../support/clusterNodes.js';
import { keySlot } from '../support/keySlot.js';

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let nodes: Redis[];
let store: RedisLockStore;

beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  client = cluster.connect();
  nodes = cluster.nodeClients();
  store = new RedisLockStore(client);
});
afterAll(async () => {
  store?.close();
  client?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

multiKeyContract('RedisLockStore on a 3-master Cluster', async () => ({
  store,
  holderOf: (storeKey) => client.get(storeKey),
  close: async () => undefined,
}));

describe('a set across the nodes of a Cluster', () => {
  it('holds one key on each node (three slots), taken in lock order, all given back', async () => {
    const keys = keysOnEachNode(client, nodes, 'mk:cluster:');
    expect(new Set(keys.map((key) => keySlot(storeKeyOf(key)))).size).toBe(3);
    const locker = createLocker({ store });
    const order: string[] = [];
    locker.events$.subscribe((e) => e.type === 'acquired' && order.push(e.key));
    const onNodes = await lastValueFrom(
      locker.usingLocks([...keys].reverse(), async (locks) =>
        // each node holds its own key, with the token of that key's lease
        Promise.all(nodes.map(async (node, i) => (await node.get(storeKeyOf(keys[i]!))) === locks.leases.get(keys[i]!)!.token)),
      ),
    );
    expect(onNodes).toEqual([true, true, true]);
    expect(order).toEqual([...keys].sort());
    expect(await Promise.all(nodes.map((node, i) => node.exists(storeKeyOf(keys[i]!))))).toEqual([0, 0, 0]);
    await locker.close();
  });
});
