/**
 * The tests StrykerJS runs against each mutant of the safety-critical modules (npm run mutation):
 * the engine's tests on the in-memory store, and the Redis tests of lease safety, fencing and the
 * gate's hand-offs. (The whole suite per mutant would take hours on two cores.)
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: [
      'test/engine/**/*.test.ts',
      'test/redis/leaseSafety.test.ts',
      'test/redis/dataLossEvents.test.ts',
      'test/redis/coreOnlyEngine.test.ts',
      'test/redis/fencing.test.ts',
    ],
  },
});
