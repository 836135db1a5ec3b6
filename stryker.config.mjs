// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the safety guards (npm run mutation): StrykerJS changes the code of the
 * lease and gate modules one small edit at a time (a condition inverted, a comparison shifted, a
 * call removed) and runs the tests that cover it; a mutant that every test survives is a guard no
 * test protects. Report: reports/mutation/mutation.html, and the score on the console.
 */
export default mutationRun({
  name: 'mutation',
  vitestConfig: 'vitest.mutation.config.ts',
  mutate: [
    'src/engine/gate/KeyGate.ts',
    'src/engine/gate/GateState.ts',
    'src/engine/lease/StoreLease.ts',
    'src/engine/lease/HeldLease.ts',
    'src/engine/fencing/FenceBlock.ts',
  ],
  tempDirName: '.stryker-tmp',
});
