// @ts-check
/**
 * Mutation testing of a mutex's wait at the store (npm run mutation:session): StoreSession — the
 * attempts on behalf of the first local waiter, the place kept in the store's line and refreshed,
 * the attempt at the wait limit that leaves the line, a grant answered late or handed over while
 * leaving given back, the leave sent only after the last attempt settled, wake-up signals dated
 * against the place. The tests run: vitest.mutation.session.config.ts. A narrower run:
 * `npx stryker run stryker.session.config.mjs --mutate <file:lines>`.
 * Report: reports/mutation-session/mutation.html.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.session.config.ts', related: false },
  coverageAnalysis: 'perTest',
  mutate: ['src/engine/session/StoreSession.ts'],
  concurrency: 2,
  timeoutMS: 20_000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation-session/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation-session/mutation.json' },
  tempDirName: '.stryker-tmp-session',
  cleanTempDir: true,
  ignoreStatic: true,
};
