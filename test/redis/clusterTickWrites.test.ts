/**
 * On a real 3-master Redis Cluster, the store's calls of one tick leave in one write per master
 * (`coalesceWrites`): the store holds the writes of the connection to the master serving each
 * call's key (src/backends/redis/protocol/clusterConnection.ts). Counted on each master
 * connection's socket.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { addressOf, clusterForSuite, keysOnEachNode, storeKeyOf } from '../support/clusterNodes.js';
import { countWrites, type Writes } from '../support/socketWrites.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();
const suite = clusterForSuite();

/** 10 store keys on each master, grouped by master (`host:port`). */
function keysByMaster(): Map<string, string[]> {
  const byMaster = new Map<string, string[]>();
  for (let round = 0; round < 10; round++) {
    keysOnEachNode(suite.client, suite.nodes, `tick${round}-`).forEach((key, i) => {
      const master = addressOf(suite.nodes[i]!);
      byMaster.set(master, [...(byMaster.get(master) ?? []), storeKeyOf(key)]);
    });
  }
  return byMaster;
}

/** The writes on the client's connection to each master, from now on. */
function writesByMaster(): Map<string, Writes> {
  const writes = new Map<string, Writes>();
  for (const node of suite.client.nodes('master')) writes.set(`${node.options.host}:${node.options.port}`, countWrites(node as Redis));
  return writes;
}

async function storeOn(options?: RedisLockStoreOptions): Promise<RedisLockStore> {
  const store = new RedisLockStore(suite.client, options);
  // load the scripts on every master (a first call carries the script's source)
  await Promise.all([...keysByMaster().values()].map(async ([key]) => store.release(key!, 'nobody')));
  return store;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the store’s calls of one tick on a Cluster', () => {
  it('10 acquisitions per master made in one tick: two writes to each master, every lock granted', async () => {
    const store = await storeOn();
    const byMaster = keysByMaster();
    const writes = writesByMaster();
    const calls = [...byMaster.values()].flat().map((key) => store.tryAcquire(key, `t-${key}`, 10_000));
    await tick();
    for (const [master] of byMaster) expect(writes.get(master)!.sizes).toEqual([1, 9]);
    const results = await Promise.all(calls);
    expect(results.every((r) => r.acquired)).toBe(true);
    await Promise.all([...byMaster.values()].flat().map((key) => store.release(key, `t-${key}`)));
    store.close();
  });

  it('with coalesceWrites: false, one write per call', async () => {
    const store = await storeOn({ coalesceWrites: false });
    const byMaster = keysByMaster();
    const writes = writesByMaster();
    const calls = [...byMaster.values()].flat().map((key) => store.tryAcquire(key, `f-${key}`, 10_000));
    await tick();
    for (const [master] of byMaster) expect(writes.get(master)!.count).toBe(10);
    await Promise.all(calls);
    await Promise.all([...byMaster.values()].flat().map((key) => store.release(key, `f-${key}`)));
    store.close();
  });
});
