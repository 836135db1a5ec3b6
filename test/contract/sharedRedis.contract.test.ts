import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { PLACE_TTL, sharedStoreContract } from './sharedStoreContract.js';

sharedStoreContract('RedisLockStore', async () => {
  const server = await EmbeddedRedis.start();
  const client = connect(server);
  const store = new RedisLockStore(client, { placeTtl: PLACE_TTL });
  return {
    store,
    clear: async () => {
      await client.flushall();
    },
    close: async () => {
      store.close();
      client.disconnect();
      await server.stop();
    },
  };
});
