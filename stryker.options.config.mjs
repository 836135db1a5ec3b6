// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the option checks (npm run mutation:options): validate.ts (keys, locker,
 * acquire and operator options, retry, renew, cohort), validatePermits.ts (semaphore and
 * read-write lock options) and validity.ts (the lease validity the checks bound renewal with),
 * against the tests of bad input (vitest.mutation.options.config.ts). A surviving mutant there is
 * an input the library takes that it should refuse, or a refusal that names the wrong option or
 * range. Report: reports/mutation-options/mutation.html.
 */
export default mutationRun({
  name: 'mutation-options',
  vitestConfig: 'vitest.mutation.options.config.ts',
  mutate: ['src/options/validate.ts', 'src/options/validatePermits.ts', 'src/options/validity.ts'],
  concurrency: 1,
});
