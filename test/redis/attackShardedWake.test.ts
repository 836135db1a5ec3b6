/**
 * Attacks on the Cluster's sharded wake-ups (ShardedWake) on a real 3-master Cluster: a channel
 * dropped while its SSUBSCRIBE is still on its way, and watched again before that answer.
 */
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShardedWake } from '../../src/backends/redis/ShardedWake.js';
import { shardChannel } from '../../src/backends/redis/protocol/keyLayout.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { addressOf, masterOf } from '../support/clusterNodes.js';
import { eventually } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let nodes: Redis[];

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  client = cluster.connect();
  await new Promise((resolve) => client.once('ready', resolve));
  nodes = cluster.nodeClients();
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const quiet = { message: () => undefined, status: () => undefined };

describe('attack: a shard channel dropped and watched again while its SSUBSCRIBE is on its way', () => {
  it('the late answer of the first SSUBSCRIBE does not unsubscribe the channel the second watch relies on', async () => {
    const wake = new ShardedWake(client, 'attack-store', '', 0);
    try {
      // another channel keeps the subscriber connection open
      const keep = wake.watch('keep', 't0', quiet);
      await keep.ready;
      const key = 'hot';
      const channel = shardChannel(key, 'attack-store').subscribed;
      const index = nodes.findIndex((node) => addressOf(node) === masterOf(client, channel));
      const server = cluster.nodes[index]!;
      const node = nodes[index]!;
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
