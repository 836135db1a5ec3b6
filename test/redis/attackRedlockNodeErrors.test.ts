/**
 * Attacks on the quorum store (RedlockStore over 3 private Redis servers) through nodes that answer
 * errors rather than silence — scripts flushed (NOSCRIPT), out of memory (maxmemory, noeviction), a
 * read-only replica — and through its input: two names for one server, hostile keys, one node.
 */
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, LockOptionsError, QuorumUnreachableError } from '../../src/index.js';
import { RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually } from '../support/timing.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
});
afterEach(async () => {
  // (undo what a test did to a node, even when it failed)
  await Promise.all(nodes.admins.map((admin) => admin.config('SET', 'maxmemory', '0')));
  await Promise.all(nodes.admins.map((admin) => admin.replicaof('NO', 'ONE')));
});

let n = 0;
const fresh = (what: string) => `attack-errors:${what}:${++n}`;
const holders = (key: string) => Promise.all(nodes.admins.map((admin) => admin.get(key)));

describe('RedlockStore: nodes that answer errors', () => {
  it('scripts flushed on every node (NOSCRIPT): the next acquire, extend and release still work', async () => {
    const store = nodes.store();
    const key = fresh('noscript');
    expect(await store.tryAcquire(key, 'a', 10_000)).toMatchObject({ acquired: true });
    await Promise.all(nodes.admins.map((admin) => admin.script('FLUSH')));
    expect(await store.extend(key, 'a', 10_000)).toBe('extended');
    await Promise.all(nodes.admins.map((admin) => admin.script('FLUSH')));
    expect(await store.release(key, 'a')).toBe(true);
    await Promise.all(nodes.admins.map((admin) => admin.script('FLUSH')));
    expect(await store.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    expect(await store.release(key, 'b')).toBe(true);
  });

  it('one node out of memory is a failed minority: grants go on; two are the quorum error naming OOM; release never throws', async () => {
    const store = nodes.store();
    const key = fresh('oom');
    await nodes.admins[0]!.config('SET', 'maxmemory-policy', 'noeviction');
    await nodes.admins[0]!.config('SET', 'maxmemory', '1');
    const first = await store.tryAcquire(key, 'a', 10_000);
    expect(first).toMatchObject({ acquired: true });
    expect(await holders(key)).toEqual([null, 'a', 'a']);
    expect(await store.extend(key, 'a', 10_000)).toBe('extended');
    expect(await store.release(key, 'a')).toBe(true);
    await nodes.admins[1]!.config('SET', 'maxmemory-policy', 'noeviction');
    await nodes.admins[1]!.config('SET', 'maxmemory', '1');
    const error = await store.tryAcquire(key, 'b', 10_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumUnreachableError);
    expect((error as Error).message).toMatch(/OOM/);
    // nothing left on the node that could write
    expect(await holders(key)).toEqual([null, null, null]);
  });

  it('a node turned read-only replica is a failed minority (READONLY), and the lock held elsewhere is still exclusive', async () => {
    const store = nodes.store();
    const other = nodes.store();
    const key = fresh('readonly');
    await nodes.admins[2]!.replicaof(nodes.servers[0]!.host, String(nodes.servers[0]!.port));
    expect(await store.tryAcquire(key, 'a', 10_000)).toMatchObject({ acquired: true });
    expect(await other.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
    expect(await store.release(key, 'a')).toBe(true);
    expect(await other.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: true });
    expect(await other.release(key, 'b')).toBe(true);
  });
});

describe('RedlockStore: input', () => {
  it('two names for one server (127.0.0.1 and localhost) are accepted, as docs/redlock.md says; exclusion holds, fault tolerance does not', async () => {
    const [a, b] = nodes.clients();
    const twin = new Redis({ host: 'localhost', port: nodes.servers[0]!.port, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    twin.on('error', () => undefined);
    const [c, d, e] = nodes.clients();
    try {
      const store = new RedlockStore([a!, twin, b!], { nodeTimeout: 1_000 });
      const honest = new RedlockStore([c!, d!, e!], { nodeTimeout: 1_000 });
      const key = fresh('twin');
      // server 0 counts twice: it alone is a quorum of the twin store
      expect(await store.tryAcquire(key, 'a', 10_000)).toMatchObject({ acquired: true });
      expect(await honest.tryAcquire(key, 'b', 10_000)).toMatchObject({ acquired: false });
      expect(await store.release(key, 'a')).toBe(true);
      store.close();
      honest.close();
    } finally {
      twin.disconnect();
    }
  });

  it('hostile keys: reserved namespace anywhere in the key, a stray "}", a hash tag, a 64 KB key', async () => {
    const store = nodes.store();
    for (const bad of ['rxjs-lock:fence:{k}', 'a:rxjs-lock:b', 'x}y']) {
      expect(() => store.checkKey(bad)).toThrow(LockOptionsError);
      await expect(store.tryAcquire(bad, 't', 1_000)).rejects.toBeInstanceOf(LockOptionsError);
    }
    for (const good of ['{tag}:k', `long:${'k'.repeat(64 * 1024)}`, 'spaces and\nnewlines']) {
      expect(await store.tryAcquire(good, 't', 5_000)).toMatchObject({ acquired: true });
      expect(await store.extend(good, 't', 5_000)).toBe('extended');
      expect(await store.release(good, 't')).toBe(true);
      // (a release answers once a quorum gave the key up; the last node follows)
      await eventually(async () => (await holders(good)).every((holder) => holder === null));
    }
    await expect(store.tryAcquire('k', 't', 1_000, 0)).rejects.toBeInstanceOf(LockOptionsError);
    await expect(store.tryAcquire('k', 't', 1.5)).rejects.toBeInstanceOf(LockOptionsError);
  });

  it('one node: a quorum of one, through a locker', async () => {
    const [a] = nodes.clients();
    const store = new RedlockStore([a!]);
    const locker = createLocker({ store, ttl: 2_000, waitTimeout: 300 });
    const key = fresh('one');
    const lease = await firstValueFrom(locker.acquire(key));
    const refused = await firstValueFrom(locker.acquire(key, { waitTimeout: 100 })).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    await lease.release();
    await locker.close();
    store.close();
  });
});
