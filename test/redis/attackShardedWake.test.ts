/**
 * Attacks on the Cluster's sharded wake-ups (ShardedWake) on a real 3-master Cluster: a channel
 * dropped while its SSUBSCRIBE is still on its way, and watched again before that answer; many
 * keys contended by two processes while every node's pub/sub connections are killed again and
 * again (signals lost): every waiter still gets its key (by polling), never two holders at once,
 * and no shard channel stays subscribed once the waits are over.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defer, lastValueFrom, mergeMap, range, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { ShardedWake } from '../../src/backends/redis/ShardedWake.js';
import { shardChannel } from '../../src/backends/redis/protocol/keyLayout.js';
import { addressOf, clusterForSuite, masterOf } from '../support/clusterNodes.js';
import { eventually } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();
const suite = clusterForSuite();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const quiet = { message: () => undefined, status: () => undefined };

/**
 * Readies `wake` (of the store named `store`) for a test on `key`'s shard channel: another channel,
 * `keepKey`'s, watched and live, which keeps the subscriber connection open. Returns that watch,
 * the channel's name, the server that serves it and a plain client of that server.
 */
async function onChannelOf(wake: ShardedWake, store: string, keepKey: string, key: string) {
  const { cluster, client, nodes } = suite;
  const keep = wake.watch(keepKey, 't0', quiet);
  await keep.ready;
  const channel = shardChannel(key, store).subscribed;
  const index = nodes.findIndex((node) => addressOf(node) === masterOf(client, channel));
  return { keep, channel, server: cluster.nodes[index]!, node: nodes[index]! };
}

describe('attack: a shard channel dropped and watched again while its SSUBSCRIBE is on its way', () => {
  it('the late answer of the first SSUBSCRIBE does not unsubscribe the channel the second watch relies on', async () => {
    const wake = new ShardedWake(suite.client, 'attack-store', '', 0);
    try {
      const key = 'hot';
      const { keep, channel, server, node } = await onChannelOf(wake, 'attack-store', 'keep', key);
      // the node holds the SSUBSCRIBE's answer while the first watch stops and its channel (linger 0) goes
      server.pause();
      let second;
      try {
        const first = wake.watch(key, 'a', quiet);
        first.stop();
        await sleep(50);
        second = wake.watch(key, 'b', quiet);
      } finally {
        server.resume();
      }
      await second.ready;
      expect(second.active).toBe(true);
      await sleep(200); // a SUNSUBSCRIBE sent on the first answer lands by now
      const [, count] = (await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
      expect(count).toBe(1);
      keep.stop();
      second.stop();
    } finally {
      wake.close();
    }
  });
});

/**
 * A wait that looks again once its channel is live (as a session does: `ready.then`), then gives
 * up at once (linger 0: the channel goes before its SSUBSCRIBE is answered). A weak reference to
 * the wait's state (made here, so that no frame of the test keeps it).
 */
function waitThatGivesUp(wake: ShardedWake, key: string): WeakRef<object> {
  const watch = wake.watch(key, 'a', quiet);
  const wait = { session: new Array(1_000).fill('state') };
  void watch.ready.then(() => wait.session.length);
  watch.stop();
  return new WeakRef(wait);
}

describe('attack: a shard channel dropped while its SSUBSCRIBE is on its way, and not watched again', () => {
  it('what waited for its watch to be ready is not kept for good (no reaction anchored to a promise that never settles)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const wake = new ShardedWake(suite.client, 'attack-store-gc', '', 0);
    try {
      const key = 'dropped';
      const { keep, server } = await onChannelOf(wake, 'attack-store-gc', 'keep-gc', key);
      let waiter: WeakRef<object>;
      server.pause();
      try {
        waiter = waitThatGivesUp(wake, key);
        await sleep(50);
      } finally {
        server.resume();
      }
      await sleep(200); // the late answer came: the channel is gone, its ready will never resolve
      gc();
      await sleep(10);
      gc();
      expect(waiter.deref()).toBeUndefined();
      keep.stop();
    } finally {
      wake.close();
    }
  });
});

describe('attack: many keys, signals lost', () => {
  it('two processes on 40 keys while pub/sub connections are killed: all get their keys, one at a time, and no channel is left', async () => {
    const { cluster, nodes } = suite;
    const clients = [cluster.connect(), cluster.connect()];
    await Promise.all(clients.map((c) => new Promise((resolve) => c.once('ready', resolve))));
    const stores = clients.map((c) => new RedisLockStore(c, { lingerMs: 50, placeTtl: 1_000 }));
    const lockers = stores.map((store) => createLocker({ store, ttl: 5_000, waitTimeout: 30_000 }));
    const inside = new Map<string, number>();
    const overlaps: string[] = [];
    let killing = true;
    let kills = 0;
    let channelsSeen = 0;
    const shardChannels = async () => ((await Promise.all(nodes.map((node) => node.call('PUBSUB', 'SHARDCHANNELS', '*')))) as string[][]).flat();
    const killer = (async () => {
      while (killing) {
        await sleep(50);
        channelsSeen = Math.max(channelsSeen, (await shardChannels()).length);
        kills++;
        await Promise.all(nodes.map((node) => node.call('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => undefined)));
      }
    })();
    try {
      const work = (key: string) =>
        defer(async () => {
          const n = (inside.get(key) ?? 0) + 1;
          inside.set(key, n);
          if (n > 1) overlaps.push(key);
          await sleep(30);
          inside.set(key, inside.get(key)! - 1);
        });
      const rounds = lockers.map((locker) =>
        lastValueFrom(
          range(0, 240).pipe(
            mergeMap((i) => work(`k${i % 40}`).pipe(locker.withLock(`k${i % 40}`)), 40),
            toArray(),
          ),
        ),
      );
      const done = await Promise.all(rounds);
      expect(done.map((d) => d.length)).toEqual([240, 240]);
      expect(overlaps).toEqual([]);
    } finally {
      killing = false;
      await killer;
      await Promise.all(lockers.map((l) => l.close()));
    }
    expect(channelsSeen).toBeGreaterThan(0); // the waits used shard channels
    expect(kills).toBeGreaterThan(1);
    // the waits are over: every shard channel is given back after its linger
    await eventually(async () => (await shardChannels()).length === 0, 10_000, 50);
    stores.forEach((store) => store.close());
    clients.forEach((c) => c.disconnect());
  }, 60_000);
});
