/**
 * Attack on the script-order fix (runRegistered / runScript, ../../src/backends/redis/protocol/commands.ts):
 * ioredis' registered command marks a socket as having a script when it writes the source (EVAL)
 * there, not when the server ran it. A first call refused before it runs — here `BUSY`, another
 * client's long script — leaves the socket marked while the server never loaded the script: the
 * next call of that script on the socket goes by SHA, meets NOSCRIPT and is re-sent only once that
 * answer is back, so a call written right behind it runs first.
 *
 * FAILING (a defect of 88cc5f5, both tests): on node 0 (as after an empty restart), the store's
 * first quorumAcquire is written as EVAL and refused BUSY; the socket stays marked. Then, with
 * node 0 paused: quorumAcquire(key, a) goes as EVALSHA and quorumRelease(key, a) right behind it
 * (the grant answered by nodes 1 and 2). Node 0 runs: EVALSHA quorumAcquire → NOSCRIPT;
 * quorumRelease → 0 (nothing held); then the re-sent EVAL quorumAcquire → SET key a PX 30000.
 * The holder was told it released, and node 0 keeps the key for the whole TTL.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { connect } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';

const nodes = quorumNodes(3);

let n = 0;
const fresh = (what: string) => `script-order-busy:${what}:${++n}`;

/**
 * Runs `run` while server `index` is busy with another client's endless script (every other
 * command is refused `BUSY`), then kills that script.
 */
async function whileBusy<T>(index: number, run: () => Promise<T>): Promise<T> {
  const admin = nodes.admins[index]!;
  await admin.config('SET', 'busy-reply-threshold', '10');
  const blocker = connect(nodes.servers[index]!, { maxRetriesPerRequest: 0 });
  const looping = blocker.eval('while true do end', 0).catch((error: unknown) => error);
  try {
    await eventually(() =>
      admin.ping().then(
        () => false,
        (error: Error) => error.message.startsWith('BUSY'),
      ),
    );
    return await run();
  } finally {
    await admin.script('KILL');
    await looping;
    blocker.disconnect();
    await admin.config('SET', 'busy-reply-threshold', '5000');
  }
}

/** Resolves once every call written to `client` before it was answered, re-sends included. */
async function drained(client: Redis): Promise<void> {
  await client.ping();
  await client.ping();
  await sleep(50);
}

describe('script order after a first call refused before it ran (BUSY)', () => {
  it('a quorum grant still on its way to a node when the release is sent runs before it: no key left on the node', async () => {
    // (node 0 as just restarted: no script loaded)
    await nodes.admins[0]!.script('FLUSH');
    const clients = nodes.clients();
    const store = new RedlockStore(clients, { nodeTimeout: 1_000 });
    await nodes.connected();
    // The store's first call on node 0 is refused BUSY (nodes 1 and 2 grant it).
    const warm = fresh('warm');
    const first = await whileBusy(0, () => store.tryAcquire(warm, 'w', 30_000));
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
    const warm = await whileBusy(0, () => firstValueFrom(locker.acquire(fresh('locker-warm'))));
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
