import { lockStoreContract } from './lockStoreContract.js';
import { redisStoreUnderTest } from './redisStoreUnderTest.js';

lockStoreContract('RedisLockStore', redisStoreUnderTest());
