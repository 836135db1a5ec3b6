// Multi-key locks on the Redis store (one server) and, shorter, on the quorum store.
import { RedisLockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { multiKeyContract } from './multiKeyContract.js';

multiKeyContract('RedisLockStore', async () => {
  const server = await EmbeddedRedis.start();
  const client = connect(server);
  const admin = connect(server);
  const store = new RedisLockStore(client);
  return {
    store,
    holderOf: (storeKey) => admin.get(storeKey),
    close: async () => {
      store.close();
      client.disconnect();
      admin.disconnect();
      await server.stop();
    },
  };
});

const nodes = quorumNodes(3);

multiKeyContract(
  'RedlockStore over 3 nodes',
  async () => ({
    store: nodes.store(),
    // the holder of a quorum store's key: the token a majority of the nodes hold
    holderOf: async (storeKey) => {
      const tokens = await Promise.all(nodes.admins.map((admin) => admin.get(storeKey)));
      const counts = new Map<string, number>();
      for (const token of tokens) if (token !== null) counts.set(token, (counts.get(token) ?? 0) + 1);
      for (const [token, count] of counts) if (count >= 2) return token;
      return null;
    },
    close: async () => undefined,
  }),
  { timeScale: 3, contention: false },
);
