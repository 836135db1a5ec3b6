/**
 * The store's broadcast inbox (src/backends/redis/WakeInbox.ts) on its own, on a real Redis: the
 * rules that hand mutation (mutation/hand/WakeInbox.txt) found no test protected —
 *
 * - a grant reaches the watch of its token only, and only from the inbox channel (a caller's
 *   subscriber may carry channels of its own); a token watched again keeps its newer watch when
 *   the older one stops;
 * - `active` is false until the SUBSCRIBE is answered and for a stopped watch; each change is
 *   told once (no repeated 'resumed' for the SUBSCRIBE sent again when the connection is ready);
 * - every watch shares one connection; the channel stays subscribed for `lingerMs` after the last
 *   stop (counted from that stop, however the watches came and went before), then the store's own
 *   connection is closed, a caller's only unsubscribed (and not subscribed again when it
 *   reconnects later);
 * - a dropped connection: the watches hear it go and come back (subscribed again by the inbox,
 *   ioredis' re-subscription off, as on the store's own connection), and grants reach them after;
 * - a refused SUBSCRIBE: `ready` never resolves; `close()`: live watches go inactive, later ones
 *   never become active and open nothing; an UNSUBSCRIBE on a caller's closed connection leaves no
 *   unhandled rejection.
 *
 * Timing: the linger test leaves 0.8 s and more on each side of every moment it tells apart; "never
 * resolves" is checked over 0.5 s (a resolution there would be at once).
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { WakeInbox, type InboxListener, type InboxWatch } from '../../src/backends/redis/WakeInbox.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite({ unhandled: 'afterEach' });

const CHANNEL = 'rxjs-lock:inbox:wake-inbox-test';

/** A listener that records what it hears. */
function recorder(): InboxListener & { readonly messages: string[]; readonly statuses: boolean[] } {
  const messages: string[] = [];
  const statuses: boolean[] = [];
  return { messages, statuses, message: (m) => void messages.push(m), status: (active) => void statuses.push(active) };
}

/** An inbox on connections of its own (as the store makes them: ioredis' re-subscription off), and those connections. */
function ownedInbox(lingerMs: number): { inbox: WakeInbox; connections: Redis[] } {
  const connections: Redis[] = [];
  const inbox = new WakeInbox(
    CHANNEL,
    () => {
      const connection = connect(suite.server, { autoResubscribe: false });
      connections.push(connection);
      return connection;
    },
    lingerMs,
    true,
  );
  suite.closers.push(() => {
    inbox.close();
    for (const connection of connections) connection.disconnect();
  });
  return { inbox, connections };
}

/** An inbox on a subscriber connection the caller gives (not the inbox's to close). */
function callersInbox(lingerMs: number): { inbox: WakeInbox; subscriber: Redis } {
  const subscriber = connect(suite.server);
  const inbox = new WakeInbox(CHANNEL, () => subscriber, lingerMs, false);
  suite.closers.push(() => {
    inbox.close();
    subscriber.disconnect();
  });
  return { inbox, subscriber };
}

const subscribers = async (channel = CHANNEL): Promise<number> => Number(((await suite.admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]);
const publish = (message: string, channel = CHANNEL) => suite.admin.publish(channel, message);
const settled = (promise: Promise<unknown>): Promise<'resolved' | 'pending'> =>
  Promise.race([promise.then(() => 'resolved' as const), sleep(500).then(() => 'pending' as const)]);

/** Waits until `watch`'s listener has heard a message of its own published now (every earlier reply of its connection is in by then). */
async function roundTrip(token: string, heard: { messages: string[] }): Promise<void> {
  const marker = `granted ${token} marker-${heard.messages.length}`;
  await publish(marker);
  await eventually(() => heard.messages.includes(marker), 10_000, 5, `the marker for ${token}`);
}

describe('grants', () => {
  it("reach the watch of their token only; others' and unknown tokens' go nowhere", async () => {
    const { inbox } = ownedInbox(0);
    const [one, two] = [recorder(), recorder()];
    const w1 = inbox.watch('t1', one);
    const w2 = inbox.watch('t2', two);
    await Promise.all([w1.ready, w2.ready]);
    await publish('granted t1 7 0 1');
    await publish('granted nobody 1 0 1');
    await publish('granted t2 9 0 1');
    await eventually(() => two.messages.length === 1, 10_000);
    expect(one.messages).toEqual(['granted t1 7 0 1']);
    expect(two.messages).toEqual(['granted t2 9 0 1']);
    w1.stop();
    w2.stop();
  });

  it("on a caller's subscriber, only those on the inbox channel: a message on another channel of the connection is not a grant", async () => {
    const { inbox, subscriber } = callersInbox(0);
    const heard = recorder();
    const watch = inbox.watch('t1', heard);
    await watch.ready;
    await subscriber.subscribe('callers-own');
    await publish('granted t1 from-elsewhere', 'callers-own');
    await publish('granted t1 from-inbox');
    await eventually(() => heard.messages.includes('granted t1 from-inbox'), 10_000);
    expect(heard.messages).toEqual(['granted t1 from-inbox']);
    watch.stop();
  });

  it('a token watched again: stopping the older watch (once or twice) leaves the newer one listening', async () => {
    const { inbox } = ownedInbox(60_000);
    const [older, newer] = [recorder(), recorder()];
    const first = inbox.watch('t', older);
    await first.ready;
    const second = inbox.watch('t', newer);
    first.stop();
    expect(second.active).toBe(true);
    await roundTrip('t', newer);
    expect(older.messages).toEqual([]);
    second.stop();
    // the same listener watched again after its watch stopped: a second stop() of the old watch changes nothing
    const third = inbox.watch('t', newer);
    second.stop();
    expect(third.active).toBe(true);
    await roundTrip('t', newer);
    third.stop();
  });
});

describe('active', () => {
  it('false until the SUBSCRIBE is answered, then true (told once); false for a stopped watch while the others stay active', async () => {
    const { inbox } = ownedInbox(0);
    const [one, two] = [recorder(), recorder()];
    const w1 = inbox.watch('t1', one);
    expect(w1.active).toBe(false);
    await w1.ready;
    expect(w1.active).toBe(true);
    const w2 = inbox.watch('t2', two);
    expect(w2.active).toBe(true); // subscribed already
    // every reply of the connection is in after a message of ours: the SUBSCRIBE sent again when
    // the connection became ready did not say 'active' twice
    await roundTrip('t1', one);
    expect(one.statuses).toEqual([true]);
    w1.stop();
    expect(w1.active).toBe(false);
    expect(w2.active).toBe(true);
    w2.stop();
  });
});

describe('the connection and the linger', () => {
  it('one connection for every watch; kept subscribed for lingerMs after the last stop, then closed; the next watch opens a new one', async () => {
    const { inbox, connections } = ownedInbox(1_500);
    const w1 = inbox.watch('t1', recorder());
    const w2 = inbox.watch('t2', recorder());
    await Promise.all([w1.ready, w2.ready]);
    expect(connections).toHaveLength(1);
    expect(await subscribers()).toBe(1);
    w1.stop();
    w2.stop();
    await sleep(300);
    expect(await subscribers()).toBe(1); // lingering
    expect(connections[0]!.status).toBe('ready');
    await eventually(async () => (await subscribers()) === 0 && connections[0]!.status === 'end', 15_000, 20, 'the connection closed after the linger');
    const again = recorder();
    const w3 = inbox.watch('t3', again);
    await w3.ready;
    expect(connections).toHaveLength(2);
    expect(w3.active).toBe(true);
    await roundTrip('t3', again);
    w3.stop();
  });

  it('the linger is counted from the last stop, however the watches came and went before it', async () => {
    const lingerMs = 4_000;
    const { inbox, connections } = ownedInbox(lingerMs);
    // token a watched twice: the newer watch stops, then the older one (whose stop finds nothing
    // of its own to remove): one linger, not two
    const a1 = inbox.watch('a', recorder());
    const a2 = inbox.watch('a', recorder());
    await a2.ready;
    const t0 = performance.now();
    a2.stop();
    a1.stop(); // a linger starts…
    await sleep(1_000);
    const b = inbox.watch('b', recorder()); // …and is called off
    const c = inbox.watch('c', recorder());
    expect(b.active && c.active).toBe(true);
    b.stop(); // not the last: no linger
    await sleep(2_000);
    const last = performance.now();
    c.stop(); // the last: the linger ends lingerMs from now
    // past the end of a linger started by a's stops (t0 + 4 s) or by b's (t0 + 5 s), well before c's (t0 + 7 s)
    await sleep(Math.max(0, t0 + 5_800 - performance.now()));
    const lingered = performance.now() - last;
    if (lingered < lingerMs - 500) expect(await subscribers()).toBe(1);
    expect(connections).toHaveLength(1);
    await eventually(async () => (await subscribers()) === 0, 15_000, 20, 'the channel given back after the linger');
    expect(connections[0]!.status).toBe('end');
  });

  it("a caller's subscriber is unsubscribed after the linger, never closed, and not subscribed again when it reconnects later", async () => {
    const { inbox, subscriber } = callersInbox(0);
    const watch = inbox.watch('t', recorder());
    await watch.ready;
    watch.stop();
    await eventually(async () => (await subscribers()) === 0, 10_000, 20, 'the channel unsubscribed');
    expect(subscriber.status).toBe('ready');
    const id = String(await subscriber.client('ID'));
    const reconnected = new Promise((resolve) => subscriber.once('ready', resolve));
    await suite.admin.call('CLIENT', 'KILL', 'ID', id);
    await reconnected;
    expect(await subscriber.ping()).toBe('PONG');
    await sleep(300);
    expect(await subscribers()).toBe(0);
  });

  it("an UNSUBSCRIBE on a caller's subscriber closed meanwhile leaves no unhandled rejection", async () => {
    const { inbox, subscriber } = callersInbox(0);
    const watch = inbox.watch('t', recorder());
    await watch.ready;
    subscriber.disconnect();
    watch.stop();
    await sleep(300); // the linger (0) has run; a rejection would be reported by now (the suite checks after the test)
  });
});

describe('a dropped connection', () => {
  it('the watches hear it go and come back (the inbox subscribes again itself), and grants reach them after', async () => {
    const { inbox, connections } = ownedInbox(0);
    const [one, two] = [recorder(), recorder()];
    const w1 = inbox.watch('t1', one);
    const w2 = inbox.watch('t2', two);
    await Promise.all([w1.ready, w2.ready]);
    await roundTrip('t1', one);
    expect(Number(await suite.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBe(1);
    await eventually(() => one.statuses.length >= 3 && two.statuses.length >= 3, 15_000, 20, 'down and back');
    expect(one.statuses).toEqual([true, false, true]);
    expect(two.statuses).toEqual([true, false, true]);
    expect(w1.active && w2.active).toBe(true);
    expect(connections).toHaveLength(1);
    await roundTrip('t2', two);
    expect(one.statuses).toEqual([true, false, true]);
    w1.stop();
    w2.stop();
  });
});

describe('a SUBSCRIBE the server refuses', () => {
  it('ready never resolves and the watch stays inactive', async () => {
    await suite.admin.call('ACL', 'SETUSER', 'default', '-subscribe');
    suite.closers.push(() => suite.admin.call('ACL', 'SETUSER', 'default', '+subscribe'));
    const { inbox } = ownedInbox(0);
    const watch = inbox.watch('t', recorder());
    expect(await settled(watch.ready)).toBe('pending');
    expect(watch.active).toBe(false);
    watch.stop();
  });
});

describe('close()', () => {
  it('closes its own connection; a live watch goes inactive; a later watch never becomes active and opens nothing', async () => {
    const { inbox, connections } = ownedInbox(60_000);
    const heard = recorder();
    const live: InboxWatch = inbox.watch('t', heard);
    await live.ready;
    inbox.close();
    expect(live.active).toBe(false);
    await eventually(() => connections[0]!.status === 'end', 10_000, 20, 'the connection closed');
    expect(await subscribers()).toBe(0);
    const later = inbox.watch('u', recorder());
    expect(later.active).toBe(false);
    expect(await settled(later.ready)).toBe('pending');
    expect(connections).toHaveLength(1);
    expect(await subscribers()).toBe(0);
    later.stop();
    live.stop();
  });
});
