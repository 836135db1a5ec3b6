/**
 * A waiter woken by signals sleeps up to a quarter of its place TTL (~750 ms) between looks,
 * trusting a release to hand it the key and say so. When the waiter ahead of it takes a key that
 * lapsed (its holder's lease expired: no release, no hand-off) by its own attempt, with a TTL
 * shorter than that sleep, the one behind must be told, as a release's hand-off tells it
 * ('behind'): otherwise, if that new holder stalls too, the key sits free while the next waiter
 * sleeps. Seen as ~0.9 s stalls between acquisitions with leases lost to short TTLs.
 */
import { describe, expect, it } from 'vitest';
import { RedisLockStore } from '../../src/redis.js';
import type { WakeSignal } from '../../src/store/capabilities.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

function store(): RedisLockStore {
  const client = connect(suite.server);
  const s = new RedisLockStore(client);
  suite.closers.push(
    () => client.disconnect(),
    () => s.close(),
  );
  return s;
}

describe('a direct take from the head of the line', () => {
  it("tells the next waiter 'behind' when the grant may end before that one looks again", async () => {
    const [xs, ys, ws] = [store(), store(), store()];
    const key = 'lock:direct';
    expect((await xs.tryAcquire(key, 'X', 100)).acquired).toBe(true);
    // Y and W wait in line, Y first; W listens for its signals.
    const yWatch = ys.watch!(key, 'Y', () => undefined);
    const signals: WakeSignal[] = [];
    const wWatch = ws.watch!(key, 'W', (signal) => signals.push(signal));
    suite.closers.push(
      () => yWatch.stop(),
      () => wWatch.stop(),
    );
    await Promise.all([yWatch.ready, wWatch.ready]);
    expect(await ys.tryAcquireInLine(key, 'Y', 200, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
    await sleep(3); // (arrival order is the server's clock, ms)
    expect(await ws.tryAcquireInLine(key, 'W', 5_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
    // X's lease lapses (it never releases): the key is free, Y first in line.
    await suite.admin.del(key);
    const refused = await ws.tryAcquireInLine(key, 'W', 5_000, 1, 'keep');
    // W learns nothing of when to look again: no holder to wait for
    expect(refused).toMatchObject({ acquired: false, queued: true });
    expect((refused as { holderTtl?: number }).holderTtl).toBeUndefined();
    // Y takes it by its own attempt, for 200 ms
    expect(await ys.tryAcquireInLine(key, 'Y', 200, 1, 'keep')).toMatchObject({ acquired: true });
    await eventually(() => signals.some((s) => s.type === 'behind'), 1_000);
    const behind = signals.find((s) => s.type === 'behind')!;
    expect(behind).toMatchObject({ type: 'behind', token: 'W' });
    expect((behind as { ttl: number }).ttl).toBeLessThanOrEqual(200);
    expect((behind as { ttl: number }).ttl).toBeGreaterThan(100);
  });

  it("says nothing when the grant outlasts the next waiter's next look (a long TTL: the common case costs no message)", async () => {
    const [xs, ys, ws] = [store(), store(), store()];
    const key = 'lock:direct-long';
    expect((await xs.tryAcquire(key, 'X', 100)).acquired).toBe(true);
    const signals: WakeSignal[] = [];
    const wWatch = ws.watch!(key, 'W', (signal) => signals.push(signal));
    suite.closers.push(() => wWatch.stop());
    await wWatch.ready;
    await ys.tryAcquireInLine(key, 'Y', 30_000, 1, 'keep');
    await sleep(3);
    await ws.tryAcquireInLine(key, 'W', 30_000, 1, 'keep');
    await suite.admin.del(key);
    expect(await ys.tryAcquireInLine(key, 'Y', 30_000, 1, 'keep')).toMatchObject({ acquired: true });
    await sleep(150);
    expect(signals.filter((s) => s.type === 'behind')).toEqual([]);
  });
});
