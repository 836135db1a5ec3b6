// The Redis store seen through its core operations only (no line, no wake-up, no batch, no key
// check): what a store that implements nothing more offers. The engine's tests on a core-only
// store (test/engine/coreOnly.test.ts) show that the core is enough for every operator.
import { coreOnly } from '../../src/testing.js';
import { lockStoreContract } from './lockStoreContract.js';
import { redisStoreUnderTest } from './redisStoreUnderTest.js';

lockStoreContract('RedisLockStore, core operations only', redisStoreUnderTest(coreOnly));
