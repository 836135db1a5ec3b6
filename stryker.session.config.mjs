// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of a mutex's wait at the store (npm run mutation:session): StoreSession — the
 * attempts on behalf of the first local waiter, the place kept in the store's line and refreshed,
 * the attempt at the wait limit that leaves the line, a grant answered late or handed over while
 * leaving given back, the leave sent only after the last attempt settled, wake-up signals dated
 * against the place. The tests run: vitest.mutation.session.config.ts. A narrower run:
 * `npx stryker run stryker.session.config.mjs --mutate <file:lines>`.
 * Report: reports/mutation-session/mutation.html.
 */
export default mutationRun({
  name: 'mutation-session',
  vitestConfig: 'vitest.mutation.session.config.ts',
  mutate: ['src/engine/session/StoreSession.ts'],
  tempDirName: '.stryker-tmp-session',
});
