/**
 * Attack: a grant signal that arrives late on the subscriber connection.
 *
 * A waiter woken by pub/sub dates a grant that comes by signal from "the send time of the last
 * attempt the store answered 'queued'" (StoreSession.signalled), assuming the grant was made after
 * that attempt. Pub/sub messages and command replies travel on two different connections, so
 * nothing orders them: if the subscriber connection is slower (another route, a proxy, a shared
 * subscriber busy with other channels), the signal of a grant that has lapsed since can arrive
 * after a later refresh of the waiter's place was answered. The waiter then takes the stale signal
 * for a fresh grant, with a validity counted from that later refresh, and holds the lock while
 * the process that took the key after the lapse holds it too.
 *
 * Set-up on a real Redis: A holds the key; B (ttl 300, place TTL 3000, so while woken by signals
 * it refreshes its place every 750-1000 ms) waits in line with its subscriber connection behind a
 * TCP proxy that delays what Redis sends by 1050 ms; C (place TTL 300) waits behind B. Just after
 * B refreshed its place, A releases: the key goes to B for 300 ms (B's ttl) and B's signal is on
 * its way; B's grant lapses unclaimed and C takes the key; B's next refresh (750-1000 ms after the
 * release) is answered "queued" (behind C); then B's signal arrives, 1050 ms after the release,
 * within 300 ms of that refresh.
 * Promise: never two holders (`lease.held` true in two places).
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { Redis, type Redis as RedisClient } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { keysOf, lineOf } from '../support/handoffHarness.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';

/** A TCP proxy to Redis that delays everything Redis sends by `delayMs`, in order. */
interface DelayProxy {
  readonly port: number;
  close(): Promise<void>;
}

async function delayProxy(targetPort: number, delayMs: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pump = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.at <= now) {
        const { chunk } = queue.shift()!;
        if (!client.destroyed) client.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, Math.max(0, queue[0]!.at - now));
    };
    upstream.on('data', (chunk: Buffer) => {
      queue.push({ at: performance.now() + delayMs, chunk });
      if (timer === undefined) timer = setTimeout(pump, delayMs);
    });
    const end = () => {
      if (timer !== undefined) clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** B's place lasts 3 s: refreshed every 750-1000 ms while woken by signals. */
const B_PLACE_TTL = 3000;
/** B's ttl: a key handed to B lapses 300 ms after the hand-off unless B claims it. */
const B_TTL = 300;
/** C refreshes its place every 75-100 ms, so it takes a lapsed grant at once. */
const C_PLACE_TTL = 300;
/** What B's subscriber link adds: B's next refresh (750-1000 ms after the release) comes before its signal. */
const SIGNAL_DELAY = 1050;

let server: EmbeddedRedis;
let admin: RedisClient;
let closers: Array<() => unknown> = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await EmbeddedRedis.start();
  admin = connect(server);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  admin?.disconnect();
  await server?.stop();
  expect(unhandled).toEqual([]);
});
beforeEach(async () => {
  closers = [];
  await admin.flushall();
});
afterEach(async () => {
  for (const close of closers.reverse()) await close();
});

function newLocker(storeOptions: RedisLockStoreOptions, ttl: number): Locker {
  const client = connect(server);
  const store = new RedisLockStore(client, storeOptions);
  const locker = createLocker({ store, ttl, waitTimeout: 20_000 });
  closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

describe('attack: a grant signal delayed on the subscriber connection', () => {
  it('a waiter never takes a lapsed grant for its own while another process holds the key', async () => {
    const proxy = await delayProxy(server.port, SIGNAL_DELAY);
    closers.push(() => proxy.close());
    const overlaps: Array<{ round: number; bFence: number; cFence: number; redisHolder: string | null; bToken: string; cToken: string }> = [];
    let staleWins = 0;

    for (let round = 0; round < 4 && overlaps.length === 0; round++) {
      const key = `stale-${round}`;
      const subscriber = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 2, retryStrategy: () => 50 });
      subscriber.on('error', () => undefined);
      await subscriber.ping(); // connected (through the slow link)
      closers.push(() => subscriber.disconnect());

      const lockerA = newLocker({}, 10_000);
      const lockerB = newLocker({ placeTtl: B_PLACE_TTL, subscriber }, B_TTL);
      const lockerC = newLocker({ placeTtl: C_PLACE_TTL }, 10_000);

      const a = await firstValueFrom(lockerA.acquire(key));
      let bLease: Lease | undefined;
      let cAtB: boolean | undefined;
      let bHeldAtB = false;
      let holderAtB: string | null = null;
      let cLease: Lease | undefined;
      const bDone = firstValueFrom(lockerB.acquire(key)).then(async (lease) => {
        bLease = lease;
        cAtB = cLease?.held; // at the very moment B got its lease
        bHeldAtB = lease.held;
        holderAtB = await admin.get(`lock:${key}`);
      });
      // B: queued, its inbox subscribed through the slow link, refreshing its place slowly.
      await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 1, 3000);
      await sleep(SIGNAL_DELAY * 2 + 200);
      const cDone = firstValueFrom(lockerC.acquire(key)).then((lease) => {
        cLease = lease;
      });
      await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 2, 3000);
      // Release just after B refreshed its place (its next refresh is 750-1000 ms away).
      const bToken = (await lineOf(admin, `lock:${key}`))[0]!.token;
      const placeKey = keysOf(`lock:${key}`).places;
      const before = await admin.hget(placeKey, `w:${bToken}`);
      await eventually(async () => (await admin.hget(placeKey, `w:${bToken}`)) !== before, 3000, 1);

      // A's release hands the key to B; B's signal is SIGNAL_DELAY ms away.
      expect(await a.release()).toBe(true);
      await Promise.race([cDone, sleep(2000)]);
      expect(cLease?.held).toBe(true);
      await Promise.race([bDone, sleep(SIGNAL_DELAY + 500)]);
      if (bLease !== undefined) {
        staleWins++;
        if (cAtB === true && bHeldAtB) {
          overlaps.push({ round, bFence: bLease.fence, cFence: cLease!.fence, redisHolder: holderAtB, bToken: bLease.token, cToken: cLease!.token });
        }
      }
      await cLease?.release();
      await bDone.catch(() => undefined);
      await bLease?.release();
    }
    // Never two holders: B may only get the key after C gave it back.
    expect({ overlaps, staleWins }).toEqual({ overlaps: [], staleWins: 0 });
  });
});
