/**
 * The tests StrykerJS runs against each mutant of the shared locks' engine (npm run
 * mutation:shared, stryker.shared.config.mjs): semaphores and read-write locks on the in-memory
 * store (waits, passes, late grants, a store of one's own, inspection, the shared contract), and
 * on Redis the paths only a store with wake-up signals takes (grants announced on the inbox, late
 * and stray signals, passes from a grant from the line, the signal's guards: undated signals and
 * places, a grant's TTL and validity from the signal, the wait's watches). About 35 s for every
 * file at once.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: [
      'test/engine/permits.test.ts',
      'test/engine/permitPasses.test.ts',
      'test/engine/sharedLateGrants.test.ts',
      'test/engine/attackPermitPassesCustomStore.test.ts',
      'test/engine/sharedInspection.test.ts',
      'test/contract/sharedMemory.contract.test.ts',
      'test/redis/permitPasses.test.ts',
      'test/redis/permitWakeGrant.test.ts',
      'test/redis/attackPermitSignal.test.ts',
      'test/redis/attackPermitLateSignal.test.ts',
      'test/redis/attackPermitSignalGuards.test.ts',
    ],
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
