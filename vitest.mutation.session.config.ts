/**
 * The tests StrykerJS runs against each mutant of a mutex's wait at the store (npm run
 * mutation:session, stryker.session.config.mjs): StoreSession's attempts, its place in the store's
 * line, the leave at the wait limit, late grants given back, wake-up signals dated against the
 * place. The in-memory store has no line for a mutex, so the line and signal paths run on Redis:
 * the session-edge, wake-signal, direct-take, cancellation, lost-reply, script-order, hint and
 * close tests, beside the engine tests on the in-memory store. One file at a time (the Redis tests
 * start their own servers; two cores).
 * A narrower run: SESSION_MUTATION_TESTS, a comma-separated list of test files or globs.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

const only = process.env.SESSION_MUTATION_TESTS?.split(',').filter((file) => file !== '');

export default defineConfig({
  test: {
    ...base.test,
    include: only ?? [
      'test/engine/**/*.test.ts',
      'test/redis/sessionEdges.test.ts',
      'test/redis/attackWakeSignals.test.ts',
      'test/redis/attackMixedVersions.test.ts',
      'test/redis/attackForgedMutexSignal.test.ts',
      'test/redis/directTakeSignal.test.ts',
      'test/redis/cancellation.test.ts',
      'test/redis/attackReplyLost.test.ts',
      'test/redis/scriptOrderEngine.test.ts',
      'test/redis/attackScriptOrderBusy.test.ts',
      'test/redis/attackScriptOrderTimeout.test.ts',
      'test/redis/handoffNoscript.test.ts',
      'test/redis/redlockHints.test.ts',
      'test/redis/close.test.ts',
      'test/redis/skipWhenBusy.test.ts',
      'test/redis/coreOnlyEngine.test.ts',
      'test/redis/sessionLeaveEdges.test.ts',
      'test/redis/sessionSignalEdges.test.ts',
    ],
    maxWorkers: 1,
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
