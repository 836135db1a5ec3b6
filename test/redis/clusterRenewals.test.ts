/**
 * Renewals of many leases on a real 3-master Redis Cluster: one pipeline per node, so a batch of
 * leases spread over the masters costs each node one write (one round trip), not one per lease.
 * And a batch sent on a stale slot table (a slot moved since the client last looked) still
 * extends every lease: those answered MOVED are sent again alone, to the new owner; so are those
 * answered ASK, TRYAGAIN or CLUSTERDOWN, and every lease of a node's pipeline that fails as a whole.
 */
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/redis.js';
import { sharedKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { addressOf, connectWithStaleSlots, masterOf, migrateSlot } from '../support/clusterNodes.js';
import { keySlot } from '../support/keySlot.js';
import { eventually, sleep } from '../support/timing.js';
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
  function neighbourOf(key: string, stem: string, of: Cluster = client): string {
    for (let n = 0; ; n++) if (masterOf(of, `${stem}:${n}`) === masterOf(of, key) && keySlot(`${stem}:${n}`) !== keySlot(key)) return `${stem}:${n}`;
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
  /** A client of the cluster that keeps its first slot table and retries a redirection or a downed cluster for far longer than a test needs (ioredis' default: 16 tries, 100 ms apart). */
  async function patientClient(): Promise<Cluster> {
    const patient = new Cluster(cluster.startupNodes, {
      slotsRefreshInterval: 600_000,
      maxRedirections: 2000,
      retryDelayOnTryAgain: 100,
      retryDelayOnClusterDown: 200,
      redisOptions: { maxRetriesPerRequest: 2 },
    });
    patient.on('error', () => undefined);
    await new Promise((resolve) => patient.once('ready', resolve));
    return patient;
  }

  /** Until `done` holds or `settled` (a batch's promise) settles; bounded, for a batch that never does either. */
  async function untilDoneOrSettled(settled: Promise<unknown>, done: () => Promise<boolean>): Promise<void> {
    let over = false;
    void settled.then(
      () => (over = true),
      () => (over = true),
    );
    await eventually(async () => over || (await done()), 60_000, 25, 'the batch answered');
  }

  /** The PTTL of `key` on `node`, which may be importing its slot (ASKING first, else it answers MOVED). */
  async function pttlAsking(node: Redis, key: string): Promise<number> {
    const replies = await node.pipeline().call('ASKING').pttl(key).exec();
    return replies![1]![1] as number;
  }

  it('extends the permits of a shared lock split between source and target mid-migration (TRYAGAIN to its keys): sent again alone, ioredis retries it until the slot has moved', async () => {
    const patient = await patientClient();
    const patientStore = new RedisLockStore(patient, { wakeUp: false });
    try {
      // two shared locks of one slot: one moved whole to the target, the other split (its permits moved, its holders not)
      const split = '{split}:a';
      const whole = '{split}:b';
      for (const key of [split, whole]) expect((await patientStore.tryAcquireShared(key, `t-${key}`, 5000, 1, 1, 'leave')).acquired).toBe(true);
      const [holders, permits] = sharedKeys(split);
      const [wholeHolders, wholePermits] = sharedKeys(whole);
      const slot = keySlot(holders);
      expect(keySlot(wholeHolders)).toBe(slot);
      const source = nodes.find((node) => addressOf(node) === masterOf(patient, holders))!;
      const target = nodes.find((node) => node !== source)!;
      const [sourceId, targetId] = (await Promise.all([source.call('CLUSTER', 'MYID'), target.call('CLUSTER', 'MYID')])) as [string, string];
      await target.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
      await source.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
      await source.call('MIGRATE', String(target.options.host), String(target.options.port), '', '0', '5000', 'KEYS', wholeHolders, wholePermits, permits);
      expect(await source.exists(holders)).toBe(1);
      let extending: Promise<unknown[]> | undefined;
      try {
        // one pipeline to the source: the whole lock is extended (on the target, asked), the split one is refused with TRYAGAIN
        extending = patientStore.extendSharedMany([split, whole].map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
        await untilDoneOrSettled(extending, async () => (await pttlAsking(target, wholeHolders)) > 50_000);
      } finally {
        await migrateSlot(slot, source, target, nodes); // (completes the migration: the split lock is whole again, on the target)
      }
      expect(await extending).toEqual(['extended', 'extended']);
      expect(await target.pttl(holders)).toBeGreaterThan(50_000);
      expect(await target.pttl(wholeHolders)).toBeGreaterThan(50_000);
      for (const key of [split, whole]) expect(await patientStore.releaseShared(key, `t-${key}`)).toBe(true);
    } finally {
      patientStore.close();
      patient.disconnect();
    }
  });

  it('extends every lease of a node whose pipeline fails as a whole (the slot table, refreshed while the node was down, splits the batch): sent lease by lease', async () => {
    const patient = await patientClient();
    const patientStore = new RedisLockStore(patient, { wakeUp: false });
    try {
      // two leases of one node (in the client's table), in two slots
      const leaving = '{whole-fail}:b';
      const staying = neighbourOf(leaving, 'whole-stay', patient);
      const keys = [staying, leaving];
      for (const key of keys) expect((await patientStore.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
      const source = nodes.find((node) => addressOf(node) === masterOf(patient, leaving))!;
      const target = nodes.find((node) => node !== source)!;
      // the second one's slot moves to another node; the client does not know yet
      await migrateSlot(keySlot(leaving), source, target, nodes);
      expect(masterOf(patient, leaving)).toBe(addressOf(source));
      // and the source answers CLUSTERDOWN to everything (one of its slots, with no key, unassigned)
      let empty = -1;
      for (let n = 0; empty < 0; n++) {
        const slot = keySlot(`whole-down:${n}`);
        if (
          masterOf(patient, `whole-down:${n}`) === addressOf(source) &&
          slot !== keySlot(staying) &&
          slot !== keySlot(leaving) &&
          Number(await source.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot))) === 0
        )
          empty = slot;
      }
      await source.call('CLUSTER', 'DELSLOTS', String(empty));
      let extending: Promise<unknown[]> | undefined;
      try {
        await eventually(
          async () => /cluster_state:fail/.test((await source.call('CLUSTER', 'INFO')) as string),
          10_000,
          25,
          'the node says its cluster is down',
        );
        // the batch, one pipeline to the source, is answered CLUSTERDOWN for both; ioredis refreshes
        // the slot table and sends it again, and refuses it (its keys now on two nodes)
        extending = patientStore.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
        // each lease sent alone: the moved one is extended on its new node, the other waits for the source
        await untilDoneOrSettled(extending, async () => (await target.pttl(leaving)) > 50_000);
      } finally {
        await source.call('CLUSTER', 'ADDSLOTS', String(empty));
      }
      expect(await extending).toEqual(['extended', 'extended']);
      expect(await source.pttl(staying)).toBeGreaterThan(50_000);
      expect(await target.pttl(leaving)).toBeGreaterThan(50_000);
      await Promise.all(keys.map((key) => patientStore.release(key, `t-${key}`)));
    } finally {
      patientStore.close();
      patient.disconnect();
    }
  });

  it('extends the leases of a batch given to a client that has no slot table yet (lazyConnect): each sent alone, not one pipeline', async () => {
    const keys = keysOnEachNodeOf('lazy');
    for (const key of keys) expect((await store.tryAcquire(key, `t-${key}`, 5000)).acquired).toBe(true);
    const lazy = new Cluster(cluster.startupNodes, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 2 } });
    lazy.on('error', () => undefined);
    const lazyStore = new RedisLockStore(lazy, { wakeUp: false });
    try {
      expect(lazy.slots.length).toBe(0);
      expect(await lazyStore.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })))).toEqual(keys.map(() => 'extended'));
      for (const key of keys) expect(await client.pttl(key)).toBeGreaterThan(50_000);
    } finally {
      lazyStore.close();
      lazy.disconnect();
    }
    await Promise.all(keys.map((key) => store.release(key, `t-${key}`)));
  });

  /** A key `${stem}:<n>` on each master (the client's table). */
  function keysOnEachNodeOf(stem: string): string[] {
    const byNode = new Map<string, string>();
    for (let n = 0; byNode.size < 3; n++) if (!byNode.has(masterOf(client, `${stem}:${n}`))) byNode.set(masterOf(client, `${stem}:${n}`), `${stem}:${n}`);
    return [...byNode.values()];
  }
});
