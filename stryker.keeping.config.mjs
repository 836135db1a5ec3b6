// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the lease keeping and the store calls' time limits (npm run
 * mutation:keeping): LeaseKeeper (renewal batches and their answers, give-backs), LeaseTimers (the
 * one heap and timer behind every lease's renewal and deadline), storeCall and CallDeadlines (the
 * commandTimeout of every store call, late answers). The tests run: those of `npm run mutation`
 * (vitest.mutation.config.ts). Report: reports/mutation-keeping/mutation.html.
 */
export default mutationRun({
  name: 'mutation-keeping',
  vitestConfig: 'vitest.mutation.config.ts',
  mutate: ['src/engine/lease/LeaseKeeper.ts', 'src/engine/lease/LeaseTimers.ts', 'src/engine/calls/storeCall.ts', 'src/engine/calls/CallDeadlines.ts'],
  concurrency: 1,
  tempDirName: '.stryker-tmp-keeping',
});
