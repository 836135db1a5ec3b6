/**
 * Wake-ups on a real 3-master Redis Cluster over sharded pub/sub: a release hands the key to a
 * waiter in another process and announces it with SPUBLISH on a shard channel of the key's slot,
 * which the key's node alone delivers. A broadcast PUBLISH (the store's inbox, kept for a
 * subscriber the caller supplies and as the fallback) goes over the cluster bus to every other
 * node: the counters of CLUSTER INFO and INFO commandstats on each node show the difference.
 * And when the server refuses SSUBSCRIBE, the store falls back to the broadcast inbox.
 */
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { Cluster, type Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import type { WakeSignal } from '../../src/store/capabilities.js';
import type { LockStore } from '../../src/store/LockStore.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import type { ClusterWaiterSettings } from '../fixtures/clusterWaiter.js';
import { forkFixture, killIfRunning, messagesOf, within } from '../support/children.js';
import { addressOf, countersOf, growth, keysOnEachNode, masterOf, storeKeyOf } from '../support/clusterNodes.js';
import { eventually } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

const waiterFile = fileURLToPath(new URL('../fixtures/clusterWaiter.ts', import.meta.url));

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let nodes: Redis[];
let locker: Locker;
let child: ChildProcess | undefined;

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  client = cluster.connect();
  await new Promise((resolve) => client.once('ready', resolve));
  nodes = cluster.nodeClients();
  locker = createLocker({ store: new RedisLockStore(client), ttl: 10_000 });
}, 60_000);
afterEach(() => killIfRunning(child));
afterAll(async () => {
  await locker?.close();
  client?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

/** The node serving a locker key. */
const nodeOf = (key: string): Redis => nodes.find((node) => addressOf(node) === masterOf(client, storeKeyOf(key)))!;
const snapshot = () => Promise.all(nodes.map((node) => countersOf(node)));
const queuedOn = (key: string) => eventually(async () => (await nodeOf(key).zcard(helperKey(storeKeyOf(key), 'line'))) === 1, 20_000, 20);

/** `inner` as the engine sees it, with the type of every wake-up signal it gives pushed to `signals`. */
function recordingSignals(inner: RedisLockStore, signals: string[]): { store: LockStore; inner: RedisLockStore } {
  const watch = inner.watch!;
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'watch')
        return (key: string, token: string, listener: (signal: WakeSignal) => void) => watch(key, token, (s) => (signals.push(s.type), listener(s)));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as LockStore;
  return { store, inner };
}

/** The channels (broadcast and shard) subscribed on any node. */
async function subscribedChannels(): Promise<string[]> {
  const lists = await Promise.all(nodes.flatMap((node) => [node.call('PUBSUB', 'CHANNELS', '*'), node.call('PUBSUB', 'SHARDCHANNELS', '*')]));
  return (lists as string[][]).flat();
}

/** A waiter process; its place lasts 60 s, so it would poll only every 20 s: a grant within the bounds below came by signal. */
async function startWaiter(broadcast: boolean) {
  const settings: ClusterWaiterSettings = { startupNodes: cluster.startupNodes, placeTtl: 60_000, broadcast };
  child = forkFixture(waiterFile, 'CLUSTER_WAITER', settings);
  const next = messagesOf(child);
  await within(next('ready'), 30_000, 'waiter ready');
  return { child, next };
}

/** Hands `key` from this process to the waiter and returns each node's counters' growth over the hand-off. */
async function handOff(waiter: Awaited<ReturnType<typeof startWaiter>>, key: string) {
  const lease = await firstValueFrom(locker.acquire(key));
  waiter.child.send({ type: 'wait', key });
  await within(waiter.next('waiting'), 10_000, 'waiting');
  await queuedOn(key);
  // and its channel subscribed (a grant published before would go unheard: the waiter would find
  // it by looking again, without a signal)
  await eventually(
    async () => (await subscribedChannels()).some((channel) => channel.startsWith('rxjs-lock:inbox:') || channel.includes(storeKeyOf(key))),
    20_000,
    20,
  );
  const before = await snapshot();
  await lease.release();
  await within(waiter.next('signal:granted'), 10_000, 'a grant signal');
  await within(waiter.next('acquired'), 10_000, 'the grant');
  const after = await snapshot();
  return nodes.map((_, i) => growth(before[i]!, after[i]!));
}

describe('wake-ups on a Redis Cluster', () => {
  it('hand a key on each master to a waiting process with SPUBLISH, delivered by that master alone', async () => {
    const waiter = await startWaiter(false);
    const keys = keysOnEachNode(client, nodes, 'wake:');
    for (const key of keys) {
      const owner = nodes.indexOf(nodeOf(key));
      const grown = await handOff(waiter, key);
      // the waiter subscribed the key's shard channel on the key's node
      const channels = (await nodeOf(key).call('PUBSUB', 'SHARDCHANNELS', '*')) as string[];
      expect(channels.some((channel) => channel.startsWith('rxjs-lock:wake:{') && channel.includes(key))).toBe(true);
      expect(grown.map((g) => g.calls('spublish'))).toEqual(nodes.map((_, i) => (i === owner ? 1 : 0)));
      expect(grown.map((g) => g.calls('publish'))).toEqual([0, 0, 0]);
      // nothing went over the cluster bus to the other nodes
      expect(grown.map((g) => g.bus('publish_received'))).toEqual([0, 0, 0]);
      expect(grown.map((g) => g.bus('publish_sent'))).toEqual([0, 0, 0]);
    }
  }, 90_000);

  it('(for comparison) a broadcast inbox reaches every other node over the cluster bus', async () => {
    const waiter = await startWaiter(true);
    const [key] = keysOnEachNode(client, nodes, 'broadcast:');
    const owner = nodes.indexOf(nodeOf(key!));
    const grown = await handOff(waiter, key!);
    expect(grown.map((g) => g.calls('publish'))).toEqual(nodes.map((_, i) => (i === owner ? 1 : 0)));
    expect(grown.map((g) => g.calls('spublish'))).toEqual([0, 0, 0]);
    expect(grown[owner]!.bus('publish_sent')).toBe(nodes.length - 1);
    expect(grown.map((g) => g.bus('publish_received'))).toEqual(nodes.map((_, i) => (i === owner ? 0 : 1)));
  }, 90_000);

  it.each(['app:', '{app}:'])(
    'wakes a waiter by SPUBLISH through clients with the key prefix %s',
    async (keyPrefix) => {
      const [holderClient, waiterClient] = [0, 1].map(() => {
        const prefixed = new Cluster(cluster.startupNodes, { keyPrefix, redisOptions: { maxRetriesPerRequest: 2 } });
        prefixed.on('error', () => undefined);
        return prefixed;
      });
      const signals: string[] = [];
      const { store, inner } = recordingSignals(new RedisLockStore(waiterClient!, { placeTtl: 60_000 }), signals);
      const holder = createLocker({ store: new RedisLockStore(holderClient!), ttl: 10_000 });
      const waiting = createLocker({ store, ttl: 10_000, waitTimeout: 60_000 });
      try {
        const key = `prefixed:${keyPrefix}`;
        const line = keyPrefix + helperKey(storeKeyOf(key), 'line', keyPrefix);
        const held = await firstValueFrom(holder.acquire(key));
        const before = await snapshot();
        const second = firstValueFrom(waiting.acquire(key));
        await eventually(async () => (await client.zcard(line)) === 1 && signals.includes('resumed'), 20_000, 20);
        await held.release();
        await (await within(second, 10_000, 'the grant')).release();
        expect(signals).toContain('granted');
        const after = await snapshot();
        const grown = nodes.map((_, i) => growth(before[i]!, after[i]!));
        expect(grown.reduce((sum, g) => sum + g.calls('spublish'), 0)).toBe(1);
        expect(grown.reduce((sum, g) => sum + g.calls('publish'), 0)).toBe(0);
      } finally {
        await Promise.all([holder.close(), waiting.close()]);
        inner.close();
        holderClient!.disconnect();
        waiterClient!.disconnect();
      }
    },
    60_000,
  );

  it('falls back to the broadcast inbox when the server refuses SSUBSCRIBE', async () => {
    await Promise.all(nodes.map((node) => node.call('ACL', 'SETUSER', 'default', '-ssubscribe')));
    const waiterClient = cluster.connect();
    const signals: string[] = [];
    const { store, inner } = recordingSignals(new RedisLockStore(waiterClient, { placeTtl: 60_000 }), signals);
    const waiting = createLocker({ store, ttl: 10_000, waitTimeout: 60_000 });
    try {
      const key = 'fallback:1';
      // the first wait meets the refusal: it finds its grant without a signal (the store's poll, or
      // a free key), and no later wait tries SSUBSCRIBE again
      const held = await firstValueFrom(locker.acquire(key));
      const first = firstValueFrom(waiting.acquire(key));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await held.release();
      await (await within(first, 30_000, 'the first grant')).release();
      expect(signals).not.toContain('granted');
      // the second wait goes to the broadcast inbox, and is woken by it
      const again = await firstValueFrom(locker.acquire(key));
      const before = await snapshot();
      const second = firstValueFrom(waiting.acquire(key));
      await queuedOn(key);
      await eventually(() => signals.includes('resumed'), 20_000, 20); // the inbox is subscribed
      await again.release();
      await (await within(second, 10_000, 'the second grant')).release();
      expect(signals).toContain('granted');
      const after = await snapshot();
      expect(after.reduce((sum, c, i) => sum + (c.calls.publish ?? 0) - (before[i]!.calls.publish ?? 0), 0)).toBe(1);
    } finally {
      await waiting.close();
      inner.close();
      waiterClient.disconnect();
      await Promise.all(nodes.map((node) => node.call('ACL', 'SETUSER', 'default', '+ssubscribe')));
    }
  }, 90_000);
});
