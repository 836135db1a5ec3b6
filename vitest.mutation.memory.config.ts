/**
 * The tests StrykerJS runs against each mutant of the in-memory store (npm run mutation:memory,
 * stryker.memory.config.mjs): the store contract suites on it (mutex, shared, multi-key), the
 * lock-delay contract, the permit properties, and the memory store's own tests (its options,
 * expiry at the exact instant on a virtual clock, the sweeper, the refusal notes). The contract
 * suites are what every backend must pass, so a mutant of the memory store that survives them is
 * either equivalent or a rule the contract does not state yet: the place to add it is the
 * contract, where the Redis and quorum stores meet it too.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: [
      'test/contract/memory.contract.test.ts',
      'test/contract/memory.multikey.test.ts',
      'test/contract/sharedMemory.contract.test.ts',
      'test/engine/lockDelay.test.ts',
      'test/shared/permitProperties.test.ts',
      'test/engine/memoryStore.test.ts',
    ],
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
