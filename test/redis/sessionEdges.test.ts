/**
 * Edges of a waiting session against a real Redis, found in review: a session that fails leaves
 * the store's line (else the key is handed to a dead token and sits idle); a grant signal that
 * arrived while an attempt was in flight is only believed once the store confirms it (it may have
 * lapsed, and another process may hold the key); a caller's subscriber connection does not pile up
 * listeners as the inbox opens and closes.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, throwError, timer } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type Lease } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { LockStore } from '../../src/store/LockStore.js';
import type { QueueingStore } from '../../src/store/capabilities.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';

let server: EmbeddedRedis;
let spy: Redis;
const clients: Redis[] = [];
const stores: RedisLockStore[] = [];

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  spy = connect(server);
});
afterEach(() => {
  stores.splice(0).forEach((s) => s.close());
  clients.splice(0).forEach((c) => c.disconnect());
});
afterAll(async () => {
  spy?.disconnect();
  await server?.stop();
});

function client(): Redis {
  const c = connect(server);
  clients.push(c);
  return c;
}

function store(options?: ConstructorParameters<typeof RedisLockStore>[1]): RedisLockStore {
  const s = new RedisLockStore(client(), options);
  stores.push(s);
  return s;
}

describe('a session that fails', () => {
  it('leaves the Redis line, so the next release does not hand the key to a dead token', async () => {
    const holder = createLocker({ store: store() });
    const waiting = createLocker({ store: store() });
    const held = await firstValueFrom(holder.acquire('failing'));
    // W1 queues, then its retry policy errors on the second refusal
    const w1 = firstValueFrom(
      waiting.acquire('failing', { retry: (n: number) => (n >= 2 ? throwError(() => new Error('policy gives up')) : timer(50)) }),
    ).catch((e: unknown) => e);
    const w2Started = performance.now();
    const w2 = firstValueFrom(waiting.acquire('failing'));
    expect(await w1).toMatchObject({ message: 'policy gives up' });
    await sleep(100);
    await held.release();
    const lease = await w2;
    // without the leave, the key went to W1's dead token and W2 waited ~3 s for its place to lapse
    expect(performance.now() - w2Started).toBeLessThan(1000);
    expect(await spy.get('lock:failing')).toBe(lease.token);
    await lease.release();
  });
});

describe('a grant signal that came while an attempt was in flight', () => {
  it('is checked with the store, and never taken while another process holds the key', async () => {
    // T's store delays its second queued attempt by 200 ms on its way to Redis and, meanwhile,
    // lets H release: the key is handed to T with a 300 ms place, the signal arrives while the
    // attempt is in flight, the place lapses, X (polling, first live waiter) takes the key, and
    // only then does T's attempt run and find the key X's.
    const inner = store({ placeTtl: 300 });
    let releaseH = (): void => undefined;
    let queued = 0;
    const delayed: LockStore & QueueingStore & { watch: RedisLockStore['watch'] } = {
      tryAcquire: (key, token, ttl, fences) => inner.tryAcquire(key, token, ttl, fences),
      async tryAcquireInLine(key, token, ttl, fences, place) {
        const n = place === 'keep' ? ++queued : 0;
        if (n === 2) {
          setTimeout(() => releaseH(), 10);
          await sleep(200);
        }
        const answer = await inner.tryAcquireInLine(key, token, ttl, fences, place);
        if (n === 1) await sleep(100); // a slow reply
        return answer;
      },
      release: (key, token) => inner.release(key, token),
      extend: (key, token, ttl) => inner.extend(key, token, ttl),
      leave: (key, token) => inner.leave(key, token),
      get watch() {
        return inner.watch;
      },
    };
    const common = { ttl: 300, renew: false as const, commandTimeout: 5000, waitTimeout: 10_000 };
    const h = createLocker({ store: store({ placeTtl: 300 }), ...common, ttl: 10_000 });
    const t = createLocker({ store: delayed, ...common });
    const x = createLocker({ store: store({ placeTtl: 300, wakeUp: false }), ...common, retry: { minDelay: 5, jitter: 5 } });

    const held = await firstValueFrom(h.acquire('stale-grant'));
    releaseH = () => void held.release();
    const grantsToT: Array<{ owner: string | null; token: string }> = [];
    const tLeases: Lease[] = [];
    const sub = t.acquire('stale-grant').subscribe((lease) => {
      tLeases.push(lease);
      void spy.get('lock:stale-grant').then((owner) => grantsToT.push({ owner, token: lease.token }));
    });
    await sleep(60);
    const xLease = firstValueFrom(x.acquire('stale-grant'));
    const xHeld = await xLease;
    // while X holds the key, T must not be granted
    await sleep(300);
    for (const g of grantsToT) expect(g.owner).toBe(g.token);
    await xHeld.release();
    await eventually(() => tLeases.length === 1, 3000);
    await eventually(() => grantsToT.length === 1);
    expect(grantsToT[0]!.owner).toBe(grantsToT[0]!.token);
    expect(tLeases[0]!.fence).toBeGreaterThan(xHeld.fence);
    await tLeases[0]!.release();
    sub.unsubscribe();
  });
});

describe('a subscriber connection given by the caller', () => {
  it('keeps one message listener however often the inbox opens and closes', async () => {
    const subscriber = client();
    const holder = createLocker({ store: store() });
    const waiter = createLocker({ store: store({ subscriber, lingerMs: 10 }) });
    for (let i = 0; i < 4; i++) {
      const key = `listeners:${i}`;
      const held = await firstValueFrom(holder.acquire(key));
      const waited = firstValueFrom(waiter.acquire(key));
      await sleep(50);
      await held.release();
      await (await waited).release();
      await sleep(60); // past lingerMs: the inbox is unsubscribed, and subscribed again next time
    }
    expect(subscriber.listenerCount('message')).toBe(1);
    expect(subscriber.listenerCount('error')).toBe(2); // the test's own, and the store's
  });
});

describe('waiters with different place lifetimes', () => {
  it('a short-lived place never shortens the line for the others', async () => {
    const holder = createLocker({ store: store() });
    const held = await firstValueFrom(holder.acquire('mixed'));
    const long = store({ placeTtl: 10_000 });
    const short = store({ placeTtl: 100 });
    expect(await long.tryAcquireInLine('lock:mixed', 'a', 10_000, 1, 'keep')).toMatchObject({ queued: true });
    expect(await short.tryAcquireInLine('lock:mixed', 'b', 10_000, 1, 'keep')).toMatchObject({ queued: true });
    expect(await spy.pttl('rxjs-lock:line:{lock:mixed}')).toBeGreaterThan(15_000);
    await sleep(300); // b's place has lapsed, a's has not
    await held.release();
    expect(await spy.get('lock:mixed')).toBe('a'); // handed to a, still in line
    expect(await long.release('lock:mixed', 'a')).toBe(true);
  });
});
