// The quorum store (RedlockStore) over 5 independent Redis servers, under the shared contract
// (short TTLs ×5: every call is a round to 5 nodes, on a machine that may be loaded).
import { quorumNodes } from '../support/quorumNodes.js';
import { lockStoreContract } from './lockStoreContract.js';

const nodes = quorumNodes(5);

lockStoreContract(
  'RedlockStore over 5 nodes',
  async () => ({
    store: nodes.store(),
    countKeys: () => nodes.countKeys(),
    clear: () => nodes.flush(),
    close: async () => undefined,
  }),
  { timeScale: 5 },
);
