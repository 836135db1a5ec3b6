// The Redis store seen through its core operations only (no line, no wake-up, no batch, no key
// check): what a store that implements nothing more offers. The engine's tests on a core-only
// store (test/engine/coreOnly.test.ts) show that the core is enough for every operator.
import type { Redis } from 'ioredis';
import { RedisLockStore } from '../../src/redis.js';
import { coreOnly } from '../../src/testing.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { lockStoreContract } from './lockStoreContract.js';
import { lockKeyCount } from '../support/lockKeys.js';

lockStoreContract('RedisLockStore, core operations only', async () => {
  const server = await EmbeddedRedis.start();
  const client: Redis = connect(server);
  return {
    store: coreOnly(new RedisLockStore(client)),
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
