/**
 * The tests StrykerJS runs against each mutant of the quorum store's safety guards
 * (npm run mutation:quorum, stryker.quorum.config.mjs): the quorum store's own tests, the fence
 * and release-argument tests, and the script-order tests — only those, so each mutant runs fast.
 * (About 2 minutes per surviving mutant with every file: narrow the files, QUORUM_MUTATION_TESTS,
 * and the mutants, stryker --mutate, for a run on two cores.)
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/** A narrower run: QUORUM_MUTATION_TESTS, a comma-separated list of test files or globs. */
const only = process.env.QUORUM_MUTATION_TESTS?.split(',').filter((file) => file !== '');

export default defineConfig({
  test: {
    ...base.test,
    include: only ?? [
      'test/redis/quorumFenceGuards.test.ts',
      'test/redis/redlock*.test.ts',
      'test/redis/attackRedlock*.test.ts',
      'test/redis/releaseArgs.test.ts',
      'test/redis/scriptOrder*.test.ts',
      'test/redis/attackScriptOrder*.test.ts',
      'test/redis/fenceClock.test.ts',
      'test/redis/attackFenceRecord*.test.ts',
      'test/redis/dataLoss*.test.ts',
      'test/contract/redlock.contract.test.ts',
    ],
    maxWorkers: 1,
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
