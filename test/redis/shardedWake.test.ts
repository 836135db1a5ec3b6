/**
 * The Cluster's sharded wake-ups (src/backends/redis/ShardedWake.ts) on their own, on a real
 * 3-master Cluster: the rules that hand mutation (mutation/hand/ShardedWake.txt) found no test
 * protected —
 *
 * - a grant reaches the watch of its token on its key's channel only (the same token waiting for
 *   another key hears nothing of it), and every channel is on one subscriber connection;
 * - `active` is false until the SSUBSCRIBE is answered and for a stopped watch; a token watched
 *   again keeps its newer watch when the older one stops;
 * - a channel stays subscribed for `lingerMs` after its last stop (counted from that stop), then
 *   is unsubscribed while the others stay; the connection is closed once no channel is left, and
 *   the next watch opens a new one;
 * - the nodes drop the subscriber connections: every watch hears it go and come back, each change
 *   once, and grants reach them after; a channel watched after that is active once subscribed;
 * - a channel dropped while its SSUBSCRIBE is on its way is unsubscribed when the answer comes;
 * - `close()`: every channel and connection goes; later watches never become active, open nothing,
 *   and `available` says so.
 *
 * Timing: the linger test leaves 0.8 s and more on each side of every moment it tells apart; "never
 * resolves" is checked over 0.5 s (a resolution there would be at once).
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ShardedWake } from '../../src/backends/redis/ShardedWake.js';
import type { InboxListener } from '../../src/backends/redis/WakeInbox.js';
import { shardChannel } from '../../src/backends/redis/protocol/keyLayout.js';
import { addressOf, clusterForSuite, masterOf } from '../support/clusterNodes.js';
import { eventually, sleep } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();
const suite = clusterForSuite();

let stores = 0;

/** A ShardedWake on the suite's Cluster, under a store id of its own, closed after the test. */
function shardedWake(lingerMs: number): { wake: ShardedWake; store: string; closeAfter: () => void } {
  const store = `sharded-test-${++stores}`;
  const wake = new ShardedWake(suite.client, store, '', lingerMs);
  return { wake, store, closeAfter: () => wake.close() };
}

/** A listener that records what it hears. */
function recorder(): InboxListener & { readonly messages: string[]; readonly statuses: boolean[] } {
  const messages: string[] = [];
  const statuses: boolean[] = [];
  return { messages, statuses, message: (m) => void messages.push(m), status: (active) => void statuses.push(active) };
}

/** The node that serves `channel`'s slot. */
const nodeOf = (channel: string): Redis => suite.nodes.find((node) => addressOf(node) === masterOf(suite.client, channel))!;

/** `store`'s channel for `key`. */
const channelOf = (key: string, store: string): string => shardChannel(key, store).subscribed;

const spublish = (key: string, store: string, message: string) => {
  const channel = channelOf(key, store);
  return nodeOf(channel).call('SPUBLISH', channel, message);
};

/** The shard channels subscribed on any node. */
const shardChannels = async (): Promise<string[]> =>
  ((await Promise.all(suite.nodes.map((node) => node.call('PUBSUB', 'SHARDCHANNELS', '*')))) as string[][]).flat();

/** The sharded subscriber connections open on the nodes. */
const subscriberConnections = async (): Promise<number> =>
  ((await Promise.all(suite.nodes.map((node) => node.call('CLIENT', 'LIST')))) as string[])
    .flatMap((list) => list.split('\n'))
    .filter((line) => line.includes('ssubscriber')).length;

const settled = (promise: Promise<unknown>): Promise<'resolved' | 'pending'> =>
  Promise.race([promise.then(() => 'resolved' as const), sleep(500).then(() => 'pending' as const)]);

/** Waits until `heard` got a marker published now on `key`'s channel for `token`. */
async function roundTrip(key: string, store: string, token: string, heard: { messages: string[] }): Promise<void> {
  const marker = `granted ${token} marker-${heard.messages.length}`;
  await spublish(key, store, marker);
  await eventually(() => heard.messages.includes(marker), 10_000, 5, `the marker for ${token} on ${key}`);
}

/** Two keys whose channels (of `store`) are served by different nodes. */
function keysOnTwoNodes(store: string): [string, string] {
  const first = 'k0';
  const firstNode = masterOf(suite.client, channelOf(first, store));
  for (let n = 1; n < 10_000; n++) {
    const key = `k${n}`;
    if (masterOf(suite.client, channelOf(key, store)) !== firstNode) return [first, key];
  }
  throw new Error('no second key');
}

describe('grants', () => {
  it("reach the watch of their token on their key's channel only; every channel is on one connection", async () => {
    const { wake, store, closeAfter } = shardedWake(0);
    try {
      const [k1, k2] = keysOnTwoNodes(store);
      const [t1, u1, t2] = [recorder(), recorder(), recorder()];
      const watches = [wake.watch(k1, 't', t1), wake.watch(k1, 'u', u1), wake.watch(k2, 't', t2)];
      await Promise.all(watches.map((w) => w.ready));
      await spublish(k1, store, 'granted t on-k1');
      await spublish(k1, store, 'granted nobody on-k1');
      await roundTrip(k1, store, 'u', u1);
      await spublish(k2, store, 'granted t on-k2');
      await eventually(() => t2.messages.length === 1, 10_000);
      expect(t1.messages).toEqual(['granted t on-k1']);
      expect(t2.messages).toEqual(['granted t on-k2']);
      expect(u1.messages).toEqual(['granted u marker-0']);
      for (const w of watches) w.stop();
    } finally {
      closeAfter();
    }
  });

  it('a token watched again: stopping the older watch (once or twice) leaves the newer one listening', async () => {
    const { wake, store, closeAfter } = shardedWake(60_000);
    try {
      const [older, newer] = [recorder(), recorder()];
      const first = wake.watch('again', 't', older);
      await first.ready;
      const second = wake.watch('again', 't', newer);
      first.stop();
      expect(second.active).toBe(true);
      await roundTrip('again', store, 't', newer);
      expect(older.messages).toEqual([]);
      second.stop();
      // the same listener watched again after its watch stopped: a second stop() of the old watch changes nothing
      const third = wake.watch('again', 't', newer);
      second.stop();
      expect(third.active).toBe(true);
      await roundTrip('again', store, 't', newer);
      third.stop();
    } finally {
      closeAfter();
    }
  });
});

describe('active', () => {
  it('false until the SSUBSCRIBE is answered, then true (told once); false for a stopped watch while the others stay active', async () => {
    const { wake, store, closeAfter } = shardedWake(0);
    try {
      const [one, two] = [recorder(), recorder()];
      const w1 = wake.watch('act', 't1', one);
      expect(w1.active).toBe(false);
      await w1.ready;
      expect(w1.active).toBe(true);
      const w2 = wake.watch('act', 't2', two);
      expect(w2.active).toBe(true);
      await roundTrip('act', store, 't1', one);
      expect(one.statuses).toEqual([true]);
      w1.stop();
      expect(w1.active).toBe(false);
      expect(w2.active).toBe(true);
      w2.stop();
    } finally {
      closeAfter();
    }
  });
});

describe('channels and the connection', () => {
  it('a channel lingers after its last stop, then goes while the others stay; the connection closes with the last one, and the next watch opens a new one', async () => {
    const { wake, store, closeAfter } = shardedWake(1_500);
    try {
      const [k1, k2] = keysOnTwoNodes(store);
      const [c1, c2] = [channelOf(k1, store), channelOf(k2, store)];
      const kept = recorder();
      const w1 = wake.watch(k1, 't', recorder());
      const w2 = wake.watch(k2, 't', kept);
      await Promise.all([w1.ready, w2.ready]);
      expect((await shardChannels()).sort()).toEqual([c1, c2].sort());
      w1.stop();
      await sleep(300);
      expect(await shardChannels()).toContain(c1); // lingering
      await eventually(async () => !(await shardChannels()).includes(c1), 15_000, 20, 'the first channel given back');
      // the other channel and its connection live on
      expect(await shardChannels()).toEqual([c2]);
      expect(w2.active).toBe(true);
      await roundTrip(k2, store, 't', kept);
      w2.stop();
      await eventually(async () => (await shardChannels()).length === 0 && (await subscriberConnections()) === 0, 15_000, 20, 'everything closed');
      // a new watch: a new connection
      const again = recorder();
      const w3 = wake.watch(k1, 'v', again);
      await w3.ready;
      expect(w3.active).toBe(true);
      await roundTrip(k1, store, 'v', again);
      w3.stop();
    } finally {
      closeAfter();
    }
  });

  it("a channel's linger is counted from its last stop, however its watches came and went before it", async () => {
    const lingerMs = 4_000;
    const { wake, store, closeAfter } = shardedWake(lingerMs);
    try {
      const channel = channelOf('linger', store);
      // token a watched twice: the newer watch stops, then the older one (whose stop finds nothing
      // of its own to remove): one linger, not two
      const a1 = wake.watch('linger', 'a', recorder());
      const a2 = wake.watch('linger', 'a', recorder());
      await a2.ready;
      const t0 = performance.now();
      a2.stop();
      a1.stop(); // a linger starts…
      await sleep(1_000);
      const b = wake.watch('linger', 'b', recorder()); // …and is called off
      const c = wake.watch('linger', 'c', recorder());
      expect(b.active && c.active).toBe(true);
      b.stop(); // not the last: no linger
      await sleep(2_000);
      const last = performance.now();
      c.stop(); // the last: the linger ends lingerMs from now
      // past the end of a linger started by a's stops (t0 + 4 s) or by b's (t0 + 5 s), well before c's (t0 + 7 s)
      await sleep(Math.max(0, t0 + 5_800 - performance.now()));
      if (performance.now() - last < lingerMs - 500) expect(await shardChannels()).toContain(channel);
      await eventually(async () => !(await shardChannels()).includes(channel), 15_000, 20, 'the channel given back after the linger');
    } finally {
      closeAfter();
    }
  });
});

describe('a channel dropped while its SSUBSCRIBE is on its way, and not watched again', () => {
  it("is unsubscribed when the SSUBSCRIBE's answer comes (the connection stays, for another channel)", async () => {
    const { wake, store, closeAfter } = shardedWake(0);
    try {
      const [keepKey, key] = keysOnTwoNodes(store);
      const keep = wake.watch(keepKey, 'k', recorder());
      await keep.ready;
      const channel = channelOf(key, store);
      const server = suite.cluster.nodes[suite.nodes.indexOf(nodeOf(channel))]!;
      // the node holds the SSUBSCRIBE's answer while the watch stops and its channel (linger 0) goes
      server.pause();
      try {
        wake.watch(key, 'a', recorder()).stop();
        await sleep(50);
      } finally {
        server.resume();
      }
      await sleep(500); // the answer came
      await eventually(async () => !(await shardChannels()).includes(channel), 10_000, 20, 'the channel unsubscribed');
      expect(keep.active).toBe(true);
      keep.stop();
    } finally {
      closeAfter();
    }
  });
});

describe('the nodes drop the subscriber connections', () => {
  it('every watch hears it go and come back, each change once; grants reach them after', async () => {
    const { wake, store, closeAfter } = shardedWake(0);
    try {
      const [k1, k2] = keysOnTwoNodes(store);
      const [one, two] = [recorder(), recorder()];
      const w1 = wake.watch(k1, 't', one);
      const w2 = wake.watch(k2, 't', two);
      await Promise.all([w1.ready, w2.ready]);
      await Promise.all(suite.nodes.map((node) => node.call('CLIENT', 'KILL', 'TYPE', 'pubsub')));
      await eventually(() => one.statuses.includes(false) && two.statuses.includes(false), 15_000, 20, 'down');
      await eventually(() => w1.active && w2.active, 30_000, 20, 'back');
      for (const statuses of [one.statuses, two.statuses]) {
        expect(statuses[0]).toBe(true);
        expect(statuses.at(-1)).toBe(true);
        // each change told once
        expect(
          statuses.every((s, i) => i === 0 || s !== statuses[i - 1]),
          String(statuses),
        ).toBe(true);
      }
      await roundTrip(k1, store, 't', one);
      await roundTrip(k2, store, 't', two);
      // a channel watched after the recovery is active once subscribed, as before the drop
      const three = recorder();
      const w3 = wake.watch('after-drop', 't', three);
      await w3.ready;
      expect(w3.active).toBe(true);
      expect(three.statuses).toEqual([true]);
      await roundTrip('after-drop', store, 't', three);
      w1.stop();
      w2.stop();
      w3.stop();
    } finally {
      closeAfter();
    }
  });
});

describe('close()', () => {
  it('every channel and connection goes; a live watch goes inactive (told once); a later watch never becomes active and opens nothing; available is false', async () => {
    const { wake } = shardedWake(60_000);
    const heard = recorder();
    const live = wake.watch('closing', 't', heard);
    await live.ready;
    expect(live.active).toBe(true);
    expect(wake.available).toBe(true);
    wake.close();
    expect(wake.available).toBe(false);
    // as WakeInbox's close(): a waiter told its watch is active sleeps long, counting on a grant
    // message that a closed connection never brings; told it is not, it polls
    expect(live.active).toBe(false);
    expect(heard.statuses).toEqual([true, false]);
    await eventually(async () => (await shardChannels()).length === 0 && (await subscriberConnections()) === 0, 15_000, 20, 'everything closed');
    const later = wake.watch('closing-later', 'u', recorder());
    expect(later.active).toBe(false);
    expect(await settled(later.ready)).toBe('pending');
    expect(await shardChannels()).toEqual([]);
    expect(await subscriberConnections()).toBe(0);
    later.stop();
    live.stop();
  });
});
