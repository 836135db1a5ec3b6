// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the in-memory store, the embedded default (npm run mutation:memory):
 * MemoryLockStore (mutex keys, the line, fences), SharedPermits (semaphores and read-write locks)
 * and RecentRefusals, against the store contract suites (vitest.mutation.memory.config.ts).
 * Report: reports/mutation-memory/mutation.html.
 */
export default mutationRun({
  name: 'mutation-memory',
  vitestConfig: 'vitest.mutation.memory.config.ts',
  mutate: ['src/backends/memory/MemoryLockStore.ts', 'src/backends/memory/SharedPermits.ts', 'src/backends/memory/RecentRefusals.ts'],
  concurrency: 1,
});
