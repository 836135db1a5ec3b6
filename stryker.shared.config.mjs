// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the shared locks' engine (npm run mutation:shared): a semaphore's or
 * read-write lock's wait (SharedWait: its states, late grants given back, signals dated against
 * the place, the last attempt leaving the line), the permits passed on in-process (PermitPasses:
 * who may take them, the turn, the fences) and the part that runs them (SharedLocks: holders,
 * passes, give-backs, closing). The tests run: vitest.mutation.shared.config.ts. A narrower run:
 * `npx stryker run stryker.shared.config.mjs --mutate <file:lines>`.
 * Report: reports/mutation-shared/mutation.html.
 */
export default mutationRun({
  name: 'mutation-shared',
  vitestConfig: 'vitest.mutation.shared.config.ts',
  mutate: ['src/engine/shared/SharedWait.ts', 'src/engine/shared/PermitPasses.ts', 'src/engine/shared/SharedLocks.ts'],
  tempDirName: '.stryker-tmp-shared',
});
