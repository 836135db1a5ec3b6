/**
 * The tests StrykerJS runs against each mutant of the option checks (npm run mutation:options,
 * stryker.options.config.mjs): the bad-input suites (validation, the option attacks, the option
 * properties) and the engine tests that pass options through each entry point (operators,
 * permits, multi-key, lock delay, long waits, inspection). All on the in-memory store: the checks
 * run before any store is touched.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: [
      'test/validation.test.ts',
      'test/properties.test.ts',
      'test/engine/attackOptions.test.ts',
      'test/attackPipelines.test.ts',
      'test/engine/pipelineOperators.test.ts',
      'test/engine/permits.test.ts',
      'test/engine/multiKey.test.ts',
      'test/engine/lockDelay.test.ts',
      'test/engine/longWait.test.ts',
      'test/engine/gate.test.ts',
      'test/engine/inspection.test.ts',
      'test/engine/sharedInspection.test.ts',
      'test/engine/robustness.test.ts',
      'test/engine/shorterExtend.test.ts',
    ],
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
