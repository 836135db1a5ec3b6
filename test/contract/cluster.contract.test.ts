import type { Cluster, Redis } from 'ioredis';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { lockStoreContract } from './lockStoreContract.js';
import { lockKeyCount } from '../support/lockKeys.js';

lockStoreContract('RedisLockStore on a 3-master Redis Cluster', async () => {
  const cluster = await EmbeddedRedisCluster.start(3);
  const client: Cluster = cluster.connect();
  const nodes: Redis[] = cluster.nodeClients();
  return {
    store: new RedisLockStore(client),
    countKeys: async () => (await Promise.all(nodes.map((node) => lockKeyCount(node)))).reduce((a, b) => a + b, 0),
    clear: async () => {
      await Promise.all(nodes.map((node) => node.flushall()));
    },
    close: async () => {
      client.disconnect();
      nodes.forEach((node) => node.disconnect());
      await cluster.stop();
    },
  };
});
