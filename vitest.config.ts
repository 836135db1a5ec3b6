import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Each Redis suite starts its own servers; two workers match the machine's two cores.
    maxWorkers: 2,
    // The engine's state machines throw on an illegal move instead of refusing it.
    env: { RXJS_LOCK_STRICT: '1' },
  },
});
