// @ts-check
import { mutationRun } from './stryker.base.mjs';

/**
 * Mutation testing of the quorum store's safety guards (npm run mutation:quorum): the quorum's
 * fences (quorumFences, covers, FenceFloor), the release's "passed" decision (releaseArgs), the
 * script-order fallback (runScript), a node's acquire reply (decodeNodeAcquire) and the quorum
 * acquire (RedlockStore.tryAcquire: the count, the validity, the give-back, the raise). The tests
 * run: vitest.mutation.quorum.config.ts. One mutant at a time (the Redis tests start their own
 * servers; two cores). A narrower run: `npx stryker run stryker.quorum.config.mjs --mutate <file:lines>`.
 * Report: reports/mutation-quorum/mutation.html.
 */
export default mutationRun({
  name: 'mutation-quorum',
  vitestConfig: 'vitest.mutation.quorum.config.ts',
  mutate: [
    'src/backends/redis/quorum/quorumFences.ts',
    'src/backends/redis/quorum/FenceFloor.ts',
    'src/backends/redis/protocol/codec.ts:51-89',
    'src/backends/redis/protocol/commands.ts:51-87',
    'src/backends/redis/quorum/QuorumNode.ts:212-229',
    'src/backends/redis/quorum/RedlockStore.ts:105-169',
    'src/backends/redis/quorum/RedlockStore.ts:217-253',
    'src/backends/redis/quorum/RedlockStore.ts:300-318',
  ],
  concurrency: 1,
  tempDirName: '.stryker-tmp',
});
