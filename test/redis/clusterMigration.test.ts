/**
 * A slot migration under contention on a real 3-master Redis Cluster: three lockers (each its own
 * client and store) keep taking four keys of one hash slot while the slot moves to another master
 * (CLUSTER SETSLOT … IMPORTING/MIGRATING, MIGRATE a few keys at a time, SETSLOT … NODE). Scripts
 * meet ASK, TRYAGAIN (a script whose keys are split between the two nodes: Redis refuses it, so
 * no script ever runs on half a lock's state) and MOVED; ioredis follows or retries them.
 * Promise: never two holders of a key, every failure a typed lock error, the keys keep working on
 * the new node, and nothing is left behind once the contention stops.
 */
import type { Cluster, Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockError, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { contend } from '../support/clusterContention.js';
import { addressOf, connectWithStaleSlots, masterOf, migrateSlot, storeKeyOf } from '../support/clusterNodes.js';
import { keySlot } from '../support/keySlot.js';
import { liveKeysOf } from '../support/lockKeys.js';
import { eventually, sleep } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

let cluster: EmbeddedRedisCluster;
let clients: Cluster[];
let stores: RedisLockStore[];
let lockers: Locker[];
let nodes: Redis[];

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  // (clients that keep their first slot table: a periodic refresh could learn the new owner before
  // any command meets the moved slot, and the MOVED this test is about would go unseen)
  clients = await Promise.all([0, 1, 2].map(() => connectWithStaleSlots(cluster)));
  stores = clients.map((client) => new RedisLockStore(client, { placeTtl: 1000 }));
  lockers = stores.map((store) => createLocker({ store, ttl: 3000, waitTimeout: 5000 }));
  nodes = cluster.nodeClients();
}, 60_000);
afterAll(async () => {
  await Promise.all((lockers ?? []).map((locker) => locker.close()));
  stores?.forEach((store) => store.close());
  clients?.forEach((client) => client.disconnect());
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

/** Error replies a node sent, by kind (INFO errorstats). */
async function redirectionsOn(node: Redis): Promise<{ ASK: number; TRYAGAIN: number; MOVED: number }> {
  const stats = await node.info('errorstats');
  const count = (kind: string) => Number(new RegExp(`^errorstat_${kind}:count=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  return { ASK: count('ASK'), TRYAGAIN: count('TRYAGAIN'), MOVED: count('MOVED') };
}

describe('a slot migration on a Redis Cluster', () => {
  it('moves a hot slot under contention: no overlap, typed errors, no leaked lock', async () => {
    const keys = [0, 1, 2, 3].map((i) => `{hot}:${i}`);
    const slot = keySlot(storeKeyOf(keys[0]!));
    const source = nodes.find((node) => addressOf(node) === masterOf(clients[0]!, storeKeyOf(keys[0]!)))!;
    const target = nodes.find((node) => node !== source)!;
    // two leases held across the migration, renewed together in one pipeline to the source (one in
    // the moving slot, one in another slot of the source)
    let elsewhere = '';
    for (let n = 0; elsewhere === ''; n++)
      if (masterOf(clients[0]!, storeKeyOf(`stay:${n}`)) === addressOf(source) && keySlot(storeKeyOf(`stay:${n}`)) !== slot) elsewhere = `stay:${n}`;
    const held = await Promise.all(['{hot}:held', elsewhere].map((key) => firstValueFrom(lockers[0]!.acquire(key, { ttl: 1500 }))));
    const lost: unknown[] = [];
    held.forEach((lease) => lease.lost$.subscribe((error) => lost.push(error)));
    const redirectionsBefore = await redirectionsOn(source);
    const run = contend(lockers, keys);
    try {
      await eventually(() => run.wins >= 30, 30_000, 10);
      await migrateSlot(slot, source, target, nodes, 30);
      run.mark();
      await eventually(() => run.winsSinceMark >= 30, 30_000, 10);
      await sleep(1000); // (at least two renewals of the held leases after the move)
    } finally {
      await run.stop();
    }
    // the contention met the slot half-moved and then moved
    const redirections = await redirectionsOn(source);
    expect(redirections.ASK + redirections.TRYAGAIN - redirectionsBefore.ASK - redirectionsBefore.TRYAGAIN).toBeGreaterThan(0);
    expect(redirections.MOVED - redirectionsBefore.MOVED).toBeGreaterThan(0);
    expect(run.maxInside).toBe(1);
    // the held leases were renewed through it all, the moved one on its new node
    expect(lost).toEqual([]);
    expect(held.map((lease) => lease.held)).toEqual([true, true]);
    expect(await target.get(storeKeyOf('{hot}:held'))).toBe(held[0]!.token);
    expect(await Promise.all(held.map((lease) => lease.release()))).toEqual([true, true]);
    for (const error of run.errors) expect(isLockError(error), String(error)).toBe(true);
    // the slot is the target's now, and every locker takes the keys there
    expect(await target.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot))).toBeGreaterThanOrEqual(0);
    for (const locker of lockers) {
      const lease = await firstValueFrom(locker.acquire(keys[0]!));
      expect(await target.get(storeKeyOf(keys[0]!))).not.toBeNull();
      expect(await lease.release()).toBe(true);
    }
    // waiters' shard channels for the slot followed it to the target (ioredis re-subscribes after
    // the source drops them with the slot)
    const holding = await firstValueFrom(lockers[0]!.acquire(keys[1]!));
    const waiting = firstValueFrom(lockers[1]!.acquire(keys[1]!));
    const shardChannels = (node: Redis) => node.call('PUBSUB', 'SHARDCHANNELS', 'rxjs-lock:wake:{hot}*') as Promise<string[]>;
    await eventually(async () => (await shardChannels(target)).length > 0, 10_000, 20);
    expect(await shardChannels(source)).toEqual([]);
    await holding.release();
    expect(await (await waiting).release()).toBe(true);
    // nothing left: every lock and helper key is gone (a release that failed mid-migration leaves
    // its key to its TTL, 3 s)
    await eventually(async () => (await Promise.all(nodes.map((node) => liveKeysOf(node)))).every((keys) => keys.length === 0), 15_000, 100);
    console.info(
      `migration under contention: ${run.wins} sections, ${run.errors.length} typed failures (${[...new Set(run.errors.map((e) => (e as Error).name))].join(', ')}), ` +
        `source answered ASK ${redirections.ASK - redirectionsBefore.ASK}, TRYAGAIN ${redirections.TRYAGAIN - redirectionsBefore.TRYAGAIN}, MOVED ${redirections.MOVED - redirectionsBefore.MOVED}`,
    );
  }, 120_000);
});
