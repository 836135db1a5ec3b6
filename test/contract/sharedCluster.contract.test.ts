// The shared-lock contract on a Redis Cluster: a shared lock's five keys and its wake-up channel
// must share the lock key's hash slot, or its scripts fail with CROSSSLOT.
import type { Cluster, Redis } from 'ioredis';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { PLACE_TTL, sharedStoreContract } from './sharedStoreContract.js';

sharedStoreContract('RedisLockStore on a 3-master Redis Cluster', async () => {
  const cluster = await EmbeddedRedisCluster.start(3);
  const client: Cluster = cluster.connect();
  const nodes: Redis[] = cluster.nodeClients();
  const store = new RedisLockStore(client, { placeTtl: PLACE_TTL });
  return {
    store,
    clear: async () => {
      await Promise.all(nodes.map((node) => node.flushall()));
    },
    close: async () => {
      store.close();
      client.disconnect();
      nodes.forEach((node) => node.disconnect());
      await cluster.stop();
    },
  };
});
