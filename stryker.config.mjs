// @ts-check
/**
 * Mutation testing of the safety guards (npm run mutation): StrykerJS changes the code of the
 * lease and gate modules one small edit at a time (a condition inverted, a comparison shifted, a
 * call removed) and runs the tests that cover it; a mutant that every test survives is a guard no
 * test protects. Report: reports/mutation/mutation.html, and the score on the console.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  coverageAnalysis: 'perTest',
  mutate: [
    'src/engine/gate/KeyGate.ts',
    'src/engine/gate/GateState.ts',
    'src/engine/lease/StoreLease.ts',
    'src/engine/lease/HeldLease.ts',
    'src/engine/fencing/FenceBlock.ts',
  ],
  concurrency: 2,
  timeoutMS: 20_000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  ignoreStatic: true,
};
