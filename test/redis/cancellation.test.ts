/**
 * Cancellation safety on a real Redis: subscriptions cancelled at random moments (before the
 * acquire call is sent, while it is in flight, while waiting, while holding) leave no lock key
 * behind. The naive composition is run through the same storm to show the storm does hit the
 * in-flight window that leaks.
 */
import type { Redis } from 'ioredis';
import { defer, finalize, NEVER, switchMap, type Observable, type Subscription } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, type LockEvent, type LockStore } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { lockKeyCount } from '../support/lockKeys.js';

let server: EmbeddedRedis;
let client: Redis;
let store: LockStore;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  client = connect(server);
  store = new RedisLockStore(client);
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});
beforeEach(async () => {
  await client.flushall();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Unsubscribes at a random moment: at once, after a microtask, after I/O, or within 3 ms. */
function cancelAtRandom(subscription: Subscription): Promise<void> {
  return new Promise((resolve) => {
    const cancel = () => {
      subscription.unsubscribe();
      resolve();
    };
    const r = Math.random();
    if (r < 0.1) cancel();
    else if (r < 0.3) queueMicrotask(cancel);
    else if (r < 0.55) setImmediate(cancel);
    else setTimeout(cancel, Math.random() * 3);
  });
}

/** Subscribes `total` streams in waves of `wave`, each cancelled at a random moment. */
async function storm(total: number, wave: number, makeStream: (i: number) => Observable<unknown>): Promise<void> {
  for (let start = 0; start < total; start += wave) {
    const cancels: Promise<void>[] = [];
    for (let i = start; i < Math.min(total, start + wave); i++) {
      cancels.push(cancelAtRandom(makeStream(i).subscribe({ error: () => undefined })));
    }
    await Promise.all(cancels);
  }
}

/** Waits until the server holds no key, or `ms` passed; returns the count left. */
async function keysLeftAfter(ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  let left = await lockKeyCount(client);
  while (left > 0 && performance.now() < deadline) {
    await sleep(20);
    left = await lockKeyCount(client);
  }
  return left;
}

describe('cancellation storm', () => {
  it('10,000 subscriptions cancelled at random moments leave 0 lock keys', async () => {
    // A long TTL: a leaked key would stay for the whole test instead of expiring.
    const locker = createLocker({ store, ttl: 120_000, waitTimeout: 5_000, retry: { minDelay: 0, jitter: 2 } });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    await storm(10_000, 500, (i) => NEVER.pipe(locker.withLock(`storm:${i % 64}`)));
    expect(await keysLeftAfter(3_000)).toBe(0);
    const count = (type: LockEvent['type']) => events.filter((e) => e.type === type).length;
    // The storm reached every state: held and released, and granted after the subscriber left.
    expect(count('released')).toBeGreaterThan(0);
    expect(count('abandoned-released')).toBeGreaterThan(0);
    expect(count('release-failed')).toBe(0);
  });

  it('the naive defer(acquire) + switchMap(finalize(release)) leaks in the same storm (the storm can fail)', async () => {
    const naive = (key: string, token: string) =>
      defer(() => store.tryAcquire(key, token, 120_000)).pipe(
        switchMap((result) => (result.acquired ? NEVER.pipe(finalize(() => void store.release(key, token))) : NEVER)),
      );
    await storm(2_000, 500, (i) => naive(`naive:${i}`, `t${i}`));
    expect(await keysLeftAfter(300)).toBeGreaterThan(0);
  });
});
