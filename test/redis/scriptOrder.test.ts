/**
 * Script calls made one after the other on one client run on the server in that order, also when
 * the server does not have a script yet (a new connection, a restart, SCRIPT FLUSH): the stores
 * rely on it — a failed quorum attempt gives the key back on a node that has not answered behind
 * the grant still on its way, and a release followed by the next acquire of the same key must not
 * find the key still held by the release's own token.
 *
 * A call by SHA that meets NOSCRIPT is re-sent with its source only once the NOSCRIPT answer is
 * back, so a call made after it whose script the server has already runs first. The store sends
 * a script's source on the first call of each connection (as ioredis' `defineCommand` does), so the
 * re-send is left to a server that lost its scripts under a live connection (SCRIPT FLUSH), which
 * the last test shows is still answered correctly, if not in order.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { RedisLockStore, RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually } from '../support/timing.js';

const nodes = quorumNodes(3);

let n = 0;
const fresh = (what: string) => `script-order:${what}:${++n}`;

/** Empties each server's script cache and loads `names` on it again (another process's calls). */
async function onlyLoaded(admins: readonly Redis[], ...names: Array<keyof typeof luaScripts>): Promise<void> {
  for (const admin of admins) {
    await admin.script('FLUSH');
    for (const name of names) await admin.script('LOAD', luaScripts[name].source);
  }
}

describe('script calls run in the order they were made', () => {
  it('a give-back sent right behind a grant on a new connection runs after it: no key is left behind', async () => {
    await onlyLoaded(nodes.admins, 'release');
    const [client] = nodes.clients();
    const store = new RedisLockStore(client!, { wakeUp: false });
    const key = fresh('give-back');
    const [granted, released] = await Promise.all([store.tryAcquire(key, 'a', 30_000), store.release(key, 'a')]);
    expect(granted.acquired).toBe(true);
    expect(released).toBe(true);
    expect(await nodes.admins[0]!.get(key)).toBeNull();
    store.close();
  });

  it('a quorum release and the next acquire sent back to back run in that order on every node', async () => {
    await onlyLoaded(nodes.admins, 'quorumAcquire');
    const store = nodes.store();
    await nodes.connected();
    const key = fresh('release-then-acquire');
    const first = await store.tryAcquire(key, 'a', 30_000);
    expect(first.acquired).toBe(true);
    const [released, second] = await Promise.all([store.release(key, 'a'), store.tryAcquire(key, 'b', 30_000)]);
    expect(released).toBe(true);
    expect(second.acquired).toBe(true);
    // (the acquire answers once a quorum granted it; the last node's grant may still be on its way)
    await eventually(async () => (await Promise.all(nodes.admins.map((admin) => admin.get(key)))).every((holder) => holder === 'b'));
    await store.release(key, 'b');
  });

  it("a quorum grant written to a node that then dies, re-sent on the new connection after the node's empty restart, runs before the release made meanwhile: no key left on it", async () => {
    // (no retry limit: the calls wait for the restart in the client's queues)
    const store = new RedlockStore(nodes.clients({ maxRetriesPerRequest: null }), { nodeTimeout: 500 });
    await nodes.connected();
    // every script of the store has run on these connections
    const warm = await store.tryAcquire(fresh('warm'), 'w', 30_000);
    expect(warm.acquired).toBe(true);
    await store.release(fresh('warm'), 'w');
    const key = fresh('resent');
    nodes.servers[2]!.pause();
    try {
      expect((await store.tryAcquire(key, 'a', 30_000)).acquired).toBe(true);
      // node 2 has the grant unanswered on its socket; it dies, and the release waits for it
      await nodes.kill(2);
      expect(await store.release(key, 'a')).toBe(true);
    } finally {
      await nodes.restart(2);
    }
    // (restart waited for every client's PING, sent after what the clients re-sent and queued)
    expect(await nodes.admins[2]!.get(key)).toBeNull();
    store.close();
  });

  it('after SCRIPT FLUSH under a live connection, every call is still answered as if run alone', async () => {
    const [client] = nodes.clients();
    const store = new RedisLockStore(client!, { wakeUp: false });
    const key = fresh('flushed');
    const first = await store.tryAcquire(key, 'a', 30_000);
    expect(first.acquired).toBe(true);
    expect(await store.release(key, 'a')).toBe(true);
    await nodes.admins[0]!.script('FLUSH');
    const again = await store.tryAcquire(key, 'b', 30_000);
    expect(again.acquired).toBe(true);
    expect(await store.release(key, 'b')).toBe(true);
    expect(await nodes.admins[0]!.get(key)).toBeNull();
    store.close();
  });
});
