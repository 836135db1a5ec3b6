/** The Redis store under the LockStore contract (redis.contract.test.ts, redisCoreOnly.contract.test.ts). */
import type { Redis } from 'ioredis';
import type { LockStore } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { lockKeyCount } from '../support/lockKeys.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import type { StoreUnderTest } from './lockStoreContract.js';

/** Opens a RedisLockStore on a private server; the contract sees it through `view` (as it is, by default). */
export function redisStoreUnderTest(view: (store: RedisLockStore) => LockStore = (store) => store): () => Promise<StoreUnderTest> {
  return async () => {
    const server = await EmbeddedRedis.start();
    const client: Redis = connect(server);
    return {
      store: view(new RedisLockStore(client)),
      countKeys: () => lockKeyCount(client),
      clear: async () => {
        await client.flushall();
      },
      close: async () => {
        client.disconnect();
        await server.stop();
      },
    };
  };
}
