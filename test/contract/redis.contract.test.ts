import type { Redis } from 'ioredis';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { lockStoreContract } from './lockStoreContract.js';
import { lockKeyCount } from '../support/lockKeys.js';

lockStoreContract('RedisLockStore', async () => {
  const server = await EmbeddedRedis.start();
  const client: Redis = connect(server);
  return {
    store: new RedisLockStore(client),
    countKeys: () => lockKeyCount(client),
    clear: async () => {
      await client.flushall();
    },
    close: async () => {
      client.disconnect();
      await server.stop();
    },
  };
});
