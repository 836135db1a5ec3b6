import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedlockStore } from '../../src/redis.js';
import { drained, whileBusy } from '../support/busyServer.js';
import { quorumNodes } from '../support/quorumNodes.js';

const nodes = quorumNodes(3);

let n = 0;
const fresh = (what: string) => `script-order-busy:${what}:${++n}`;

describe('script order after a first call refused before it ran (BUSY)', () => {
  it('a quorum grant still on its way to a node when the release is sent runs before it: no key left on the node', async () => {
    // (node 0 as just restarted: no script loaded)
    await nodes.admins[0]!.script('FLUSH');
    const clients = nodes.clients();
    const store = new RedlockStore(clients, { nodeTimeout: 1_000 });
    await nodes.connected();
    // The store's first call on node 0 is refused BUSY (nodes 1 and 2 grant it).
    const warm = fresh('warm');
    const first = await whileBusy(nodes, 0, () => store.tryAcquire(warm, 'w', 30_000));
    expect(first.acquired).toBe(true);
    expect(await nodes.admins[0]!.get(warm)).toBeNull();
    expect(await store.release(warm, 'w')).toBe(true);

    const key = fresh('busy');
    nodes.servers[0]!.pause();
    try {
      // node 0 has the grant unanswered; the release is written behind it
      expect((await store.tryAcquire(key, 'a', 30_000)).acquired).toBe(true);
      expect(await store.release(key, 'a')).toBe(true);
    } finally {
      nodes.servers[0]!.resume();
    }
    await drained(clients[0]!);
    // 'a' was released (and told so), yet node 0 holds the key for 'a' for the whole TTL
    expect(await nodes.admins[0]!.get(key)).toBeNull();
    store.close();
  });

  it('through a locker: a lease released while its grant is still on its way to a node leaves no key on that node', async () => {
    // (node 0 as just restarted: no script loaded)
    await nodes.admins[0]!.script('FLUSH');
    const clients = nodes.clients();
    const locker = createLocker({ store: new RedlockStore(clients, { nodeTimeout: 1_000 }), ttl: 30_000, commandTimeout: 5_000 });
    await nodes.connected();
    // The locker's first lock: its call on node 0 is refused BUSY (nodes 1 and 2 grant it).
    const warm = await whileBusy(nodes, 0, () => firstValueFrom(locker.acquire(fresh('locker-warm'))));
    await warm.release();

    const key = fresh('locker');
    nodes.servers[0]!.pause();
    try {
      const lease = await firstValueFrom(locker.acquire(key));
      await lease.release();
    } finally {
      nodes.servers[0]!.resume();
    }
    await drained(clients[0]!);
    // (the locker's store key of `key`)
    expect(await nodes.admins[0]!.get(`lock:${key}`)).toBeNull();
    await locker.close();
  });
});
