/**
 * The quorum store's calls of one tick to a node leave in one write (`coalesceWrites`, as the
 * Redis store's): counted on each node's real socket, three private servers.
 */
import { describe, expect, it } from 'vitest';
import { LockOptionsError } from '../../src/index.js';
import { RedlockStore, type RedlockStoreOptions } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { countWrites } from '../support/socketWrites.js';

const nodes = quorumNodes(3);

/** A store on new clients of the three nodes, its scripts loaded, and the writes on each socket from then on. */
async function storeOn(options?: RedlockStoreOptions) {
  const clients = nodes.clients();
  await Promise.all(clients.map((client) => client.ping()));
  const store = new RedlockStore(clients, options);
  const warm = await store.tryAcquire('warm-up', 'w', 5_000);
  await store.release('warm-up', 'w', warm.acquired ? { fence: warm.fence, fences: 1, answeredAt: 0 } : undefined);
  return { store, writes: clients.map(countWrites) };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the quorum store’s calls of one tick', () => {
  it('20 acquisitions made in one tick: the first, then chunks of 16 at most, to each node; every lock granted', async () => {
    const { store, writes } = await storeOn();
    const calls = Array.from({ length: 20 }, (_, i) => store.tryAcquire(`q${i}`, `t${i}`, 10_000));
    await tick();
    for (const node of writes) expect(node.sizes).toEqual([1, 16, 3]);
    const results = await Promise.all(calls);
    expect(results.every((r) => r.acquired)).toBe(true);
    expect(await nodes.countKeys()).toBe(20);
    await Promise.all(results.map((r, i) => store.release(`q${i}`, `t${i}`, r.acquired ? { fence: r.fence, fences: 1, answeredAt: 0 } : undefined)));
    expect(await nodes.countKeys()).toBe(0);
  });

  it('with coalesceWrites: false, one write per call to each node', async () => {
    const { store, writes } = await storeOn({ coalesceWrites: false });
    const calls = Array.from({ length: 8 }, (_, i) => store.tryAcquire(`f${i}`, `t${i}`, 10_000));
    await tick();
    for (const node of writes) expect(node.count).toBe(8);
    await Promise.all(calls);
  });

  it('rejects a coalesceWrites that is not a boolean, naming the option', () => {
    expect(() => new RedlockStore(nodes.clients(), { coalesceWrites: 1 as unknown as boolean })).toThrow(LockOptionsError);
    expect(() => new RedlockStore(nodes.clients(), { coalesceWrites: 1 as unknown as boolean })).toThrow(/coalesceWrites.*true or false/);
  });
});
