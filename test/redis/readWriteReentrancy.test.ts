/** Reentrant read-write locks on a real Redis (the suite: test/support/readWriteReentrancy.ts). */
import { RedisLockStore } from '../../src/redis.js';
import { readWriteReentrancySuite } from '../support/readWriteReentrancy.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

readWriteReentrancySuite('RedisLockStore', async () => {
  const client = connect(suite.server);
  const store = new RedisLockStore(client);
  return {
    store,
    close: async () => {
      store.close();
      client.disconnect();
    },
  };
});
