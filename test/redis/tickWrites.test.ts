/**
 * The store's calls of one tick leave in one write (`coalesceWrites`, src/backends/redis/protocol/
 * tickWrites.ts): the first call of a tick at once, the rest held back on the socket until the tick
 * ends. Counted on the real socket of a real connection (its `_write` / `_writev`, what Node calls
 * for each system call's worth of data), against a private Redis.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, LockOptionsError } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { countWrites } from '../support/socketWrites.js';

const suite = redisSuite();

/** A client connected (its socket open) and a store on it. */
async function storeOn(options?: RedisLockStoreOptions): Promise<{ client: Redis; store: RedisLockStore }> {
  const client = connect(suite.server);
  suite.closers.push(() => client.quit());
  await client.ping();
  const store = new RedisLockStore(client, options);
  // the scripts' first calls carry their source (EVAL): load them, so every call below is alike
  await store.tryAcquire('warm-up', 'w', 1000);
  await store.release('warm-up', 'w');
  return { client, store };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the store’s calls of one tick leave together', () => {
  it('64 acquisitions made in one tick: the first written at once, the other 63 in writes of 16 at most, the last at the end of the tick', async () => {
    const { client, store } = await storeOn();
    const writes = countWrites(client);
    const calls = Array.from({ length: 64 }, (_, i) => store.tryAcquire(`k${i}`, `t${i}`, 10_000));
    // the first: at once; the next 48 in chunks of 16 as each chunk fills, before this tick's code ends
    expect(writes.sizes).toEqual([1, 16, 16, 16]);
    await tick();
    expect(writes.sizes).toEqual([1, 16, 16, 16, 15]);
    const results = await Promise.all(calls);
    expect(results.every((r) => r.acquired)).toBe(true);
    expect(await suite.admin.get('k63')).toBe('t63');
  });

  it('with coalesceWrites: false, one write per call', async () => {
    const { client, store } = await storeOn({ coalesceWrites: false });
    const writes = countWrites(client);
    const calls = Array.from({ length: 16 }, (_, i) => store.tryAcquire(`k${i}`, `t${i}`, 10_000));
    await tick();
    await Promise.all(calls);
    expect(writes.count).toBe(16);
  });

  it('holds nothing back after the tick: a lone call later goes out at once', async () => {
    const { client, store } = await storeOn();
    const writes = countWrites(client);
    const burst = [store.tryAcquire('a', 't', 10_000), store.tryAcquire('b', 't', 10_000)];
    await tick();
    await Promise.all(burst);
    const before = writes.count;
    const lone = store.release('a', 't');
    expect(writes.count).toBe(before + 1);
    expect(await lone).toBe(true);
  });

  it('keeps the order of the calls: acquire, release and the next acquire of a key in one tick', async () => {
    const { store } = await storeOn();
    const first = store.tryAcquire('k', 'one', 10_000);
    const released = store.release('k', 'one');
    const second = store.tryAcquire('k', 'two', 10_000);
    const refused = store.tryAcquire('k', 'three', 10_000);
    expect((await first).acquired).toBe(true);
    expect(await released).toBe(true);
    expect((await second).acquired).toBe(true);
    expect((await refused).acquired).toBe(false);
    expect(await suite.admin.get('k')).toBe('two');
  });

  it('renewals, releases and acquisitions of a locker holding many keys at once share writes, and the locks stay exclusive', async () => {
    const { client, store } = await storeOn();
    const locker = createLocker({ store, ttl: 2_000, renew: { interval: 50 } });
    suite.closers.push(() => locker.close());
    const writes = countWrites(client);
    let inside = 0;
    let overlaps = 0;
    const loop = async (key: string) => {
      for (let i = 0; i < 30; i++) {
        const lease = await firstValueFrom(locker.acquire(key, { waitTimeout: 10_000 }));
        inside++;
        if (inside > 8) overlaps++;
        await new Promise((resolve) => setTimeout(resolve, i % 3));
        inside--;
        await lease.release();
      }
    };
    // 8 keys, 4 loops each: 32 loops, at most 8 holders at a time
    await Promise.all(Array.from({ length: 32 }, (_, i) => loop(`key${i % 8}`)));
    expect(overlaps).toBe(0);
    const commands = writes.sizes.reduce((a, b) => a + b, 0);
    expect(writes.count).toBeLessThan(commands);
  });

  it('a connection dropped while writes are held: every call settles, and what was granted is in Redis', async () => {
    const { client, store } = await storeOn();
    const calls = Array.from({ length: 20 }, (_, i) =>
      store.tryAcquire(`k${i}`, `t${i}`, 10_000).then(
        (r) => ({ key: `k${i}`, token: `t${i}`, acquired: r.acquired }),
        () => ({ key: `k${i}`, token: `t${i}`, acquired: false }),
      ),
    );
    client.stream.destroy(); // in the same tick: the held writes go down with the socket
    const settled = await Promise.race([Promise.all(calls), new Promise<'hang'>((resolve) => setTimeout(resolve, 8_000, 'hang'))]);
    expect(settled).not.toBe('hang');
    for (const call of settled as Array<{ key: string; token: string; acquired: boolean }>) {
      if (call.acquired) expect(await suite.admin.get(call.key)).toBe(call.token);
    }
  });

  it('rejects a coalesceWrites that is not a boolean, naming the option', () => {
    const client = connect(suite.server);
    suite.closers.push(() => client.quit());
    expect(() => new RedisLockStore(client, { coalesceWrites: 'yes' as unknown as boolean })).toThrow(LockOptionsError);
    expect(() => new RedisLockStore(client, { coalesceWrites: 'yes' as unknown as boolean })).toThrow(/coalesceWrites.*true or false/);
    expect(() => new RedisLockStore(client, { coalesce: true } as RedisLockStoreOptions)).toThrow(/coalesceWrites/);
  });
});
