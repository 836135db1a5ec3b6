/**
 * Renewals of many leases on a real 3-master Redis Cluster: one pipeline per node, so a batch of
 * leases spread over the masters costs each node one write (one round trip), not one per lease.
 * And a batch sent on a stale slot table (a slot moved since the client last looked) still
 * extends every lease: those answered MOVED are sent again alone, to the new owner.
 */
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { addressOf, connectWithStaleSlots, masterOf, migrateSlot } from '../support/clusterNodes.js';
import { keySlot } from '../support/keySlot.js';
import { sleep } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let nodes: Redis[];
let store: RedisLockStore;

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  // (the slot table kept as read: the MOVED test needs it stale)
  client = await connectWithStaleSlots(cluster);
  nodes = cluster.nodeClients();
  store = new RedisLockStore(client);
}, 60_000);
afterAll(async () => {
  store?.close();
  client?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

/** Counts the writes on each master connection of `client` (a pipeline is one write, a lone command one). */
function countWrites(): { readonly perNode: Map<string, number>; stop(): void } {
  const perNode = new Map<string, number>();
  const undo: Array<() => void> = [];
  for (const node of client.nodes('master')) {
    const stream = (node as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write;
    const address = `${node.options.host}:${node.options.port}`;
    perNode.set(address, 0);
    stream.write = (...args: unknown[]) => {
      perNode.set(address, perNode.get(address)! + 1);
      return write.apply(stream, args);
    };
    undo.push(() => void (stream.write = write));
  }
  return { perNode, stop: () => undo.forEach((f) => f()) };
}

describe('renewals on a Redis Cluster', () => {
  it('extend 30 leases spread over 3 masters with one write per master', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `renew:${i}`);
    const owners = new Set(keys.map((key) => masterOf(client, key)));
    expect(owners.size).toBe(3);
    for (const key of keys) expect((await store.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
    const requests = keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 }));
    // (once first, so every node has loaded the script: ioredis checks SCRIPT EXISTS before a pipeline's first EVALSHA)
    await store.extendMany(requests);
    const writes = countWrites();
    let outcomes: unknown[];
    try {
      outcomes = await store.extendMany(requests);
    } finally {
      writes.stop();
    }
    expect(outcomes).toEqual(keys.map(() => 'extended'));
    expect([...writes.perNode.values()]).toEqual([1, 1, 1]);
    const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
    expect(ttls.every((ttl) => ttl > 50_000)).toBe(true);
    await Promise.all(keys.map((key) => store.release(key, `t-${key}`)));
  });

  it('extends every lease of a batch sent to a node that no longer serves some of them (MOVED)', async () => {
    // two keys of one slot, and one key of another slot of the same node
    const moved = ['{moving}:a', '{moving}:b'];
    const source = nodes.find((node) => addressOf(node) === masterOf(client, moved[0]!))!;
    let stay = '';
    for (let n = 0; stay === ''; n++) if (masterOf(client, `stay:${n}`) === addressOf(source)) stay = `stay:${n}`;
    const keys = [...moved, stay];
    for (const key of keys) expect((await store.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
    const target = nodes.find((node) => node !== source)!;
    await migrateSlot(keySlot(moved[0]!), source, target, nodes);
    // the client still takes the source for the moved slot
    expect(masterOf(client, moved[0]!)).toBe(addressOf(source));
    const outcomes = await store.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
    expect(outcomes).toEqual(['extended', 'extended', 'extended']);
    expect(await target.pttl(moved[0]!)).toBeGreaterThan(50_000);
    expect(await target.pttl(moved[1]!)).toBeGreaterThan(50_000);
    expect(await source.pttl(stay)).toBeGreaterThan(50_000);
    await Promise.all(keys.map((key) => store.release(key, `t-${key}`)));
  });
  /** A key of another slot than `key`, served by the same master (the client's table). */
  function neighbourOf(key: string, stem: string): string {
    for (let n = 0; ; n++) if (masterOf(client, `${stem}:${n}`) === masterOf(client, key) && keySlot(`${stem}:${n}`) !== keySlot(key)) return `${stem}:${n}`;
  }

  it('extends a lease of a batch whose key has left for the importing node mid-migration (ASK): sent again alone, ioredis asks the target', async () => {
    const asked = '{asking}:a';
    const stay = neighbourOf(asked, 'ask-stay');
    const keys = [asked, stay];
    for (const key of keys) expect((await store.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
    const source = nodes.find((node) => addressOf(node) === masterOf(client, asked))!;
    const target = nodes.find((node) => node !== source)!;
    const slot = String(keySlot(asked));
    const [sourceId, targetId] = (await Promise.all([source.call('CLUSTER', 'MYID'), target.call('CLUSTER', 'MYID')])) as [string, string];
    await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId);
    await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
    await source.call('MIGRATE', String(target.options.host), String(target.options.port), '', '0', '5000', 'KEYS', asked);
    let outcomes: unknown[];
    try {
      // (the source still serves the slot, but answers ASK for the key it no longer has)
      outcomes = await store.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
    } finally {
      await migrateSlot(keySlot(asked), source, target, nodes); // (completes the migration)
    }
    expect(outcomes).toEqual(['extended', 'extended']);
    expect(await target.pttl(asked)).toBeGreaterThan(50_000);
    expect(await source.pttl(stay)).toBeGreaterThan(50_000);
    await Promise.all(keys.map((key) => store.release(key, `t-${key}`)));
  });

  it('extends the leases of a batch sent to a node whose cluster is down for a while (CLUSTERDOWN): sent again alone, ioredis waits for it', async () => {
    // a client that waits for a downed cluster far longer than the test needs (ioredis' default: 16 × 100 ms)
    const patient = new Cluster(cluster.startupNodes, { retryDelayOnClusterDown: 200, maxRedirections: 200, redisOptions: { maxRetriesPerRequest: 2 } });
    patient.on('error', () => undefined);
    await new Promise((resolve) => patient.once('ready', resolve));
    const patientStore = new RedisLockStore(patient, { wakeUp: false });
    try {
      const down = '{down}:a';
      const keys = [down, neighbourOf(down, 'down-stay')];
      for (const key of keys) expect((await patientStore.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
      const source = nodes.find((node) => addressOf(node) === masterOf(patient, down))!;
      const slot = String(keySlot(down));
      // the node no longer serves one of its slots: it answers CLUSTERDOWN to every command
      await source.call('CLUSTER', 'DELSLOTS', slot);
      try {
        for (let i = 0; !/cluster_state:fail/.test((await source.call('CLUSTER', 'INFO')) as string); i++) {
          if (i > 200) throw new Error('the node did not say its cluster is down');
          await sleep(25);
        }
        const extending = patientStore.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
        await sleep(500); // (the batch is answered CLUSTERDOWN meanwhile)
        await source.call('CLUSTER', 'ADDSLOTS', slot);
        expect(await extending).toEqual(['extended', 'extended']);
      } finally {
        await source.call('CLUSTER', 'ADDSLOTS', slot).catch(() => undefined);
      }
      for (const key of keys) expect(await source.pttl(key)).toBeGreaterThan(50_000);
      await Promise.all(keys.map((key) => patientStore.release(key, `t-${key}`)));
    } finally {
      patientStore.close();
      patient.disconnect();
    }
  });
});
