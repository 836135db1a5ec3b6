/**
 * The tests StrykerJS runs against each mutant of the safety-critical modules (npm run mutation):
 * the engine's tests on the in-memory store (where the guards are pinned), the engine on a
 * core-only Redis store, the Redis lease-safety tests, and the give-backs of grants a lost or late
 * answer may have made (sessionLeaveEdges: LeaseKeeper.releaseAbandoned's event rules). (The
 * whole suite per mutant would take many hours on two cores; the slowest tests mark themselves to
 * be skipped here with MUTATION=1.)
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: ['test/engine/**/*.test.ts', 'test/redis/coreOnlyEngine.test.ts', 'test/redis/leaseSafety.test.ts', 'test/redis/sessionLeaveEdges.test.ts'],
    env: { ...base.test?.env, MUTATION: '1' },
  },
});
