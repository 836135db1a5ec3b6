/**
 * Attack: the answer to an acquire is lost with the connection, and ioredis re-sends the command
 * (its default `autoResendUnfulfilledCommands`).
 *
 * The first run of the acquire script took the key (SET NX with our token); the re-sent run finds
 * the key held — by our own token — and answers "held". The engine believes it was refused: with
 * `waitTimeout: 0` the acquisition fails with LockTimeoutError and no session is left to give the
 * key back, so the key stays taken, by nobody, for its whole TTL. The README promises that a
 * grant that comes after an acquisition timed out is given back (`abandoned-released`), and a
 * lock taken for nobody blocks every other process for the TTL (20 s here, 30 s by default).
 *
 * Set-up on a real Redis: the locker's connection goes through a TCP proxy that delays Redis's
 * answers by 150 ms (a slow link); while the acquire's answer is on its way the connection is
 * killed (CLIENT KILL ID), which drops it; ioredis reconnects and re-sends the acquire.
 *
 * Second case, fences: a waiter in line that takes a free key directly (not by hand-off) gets
 * fresh fences, but the acquire script leaves the places' `grant` record of an earlier hand-off
 * to the same waiter in place (it lives on while anyone else's place keeps the hash). When that
 * take's answer is lost and the acquire re-sent, the re-sent run finds the key held by the caller
 * and answers with the fences of that old record — below the fence of a holder that came in
 * between. Fences then go backwards across holders with no data lost: the in-between holder,
 * stale now, out-fences the current one. Set-up: A holds; B (slow polling, no wake-up) queues; a
 * third waiter queues behind B and dies; A's release hands the key to B, who does not look in
 * time, so the grant lapses; C takes the key and its lease ends with its TTL; B's next attempt
 * takes the free key and its answer is lost as in the first case.
 */
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { InterceptStore, keysOf } from '../support/handoffHarness.js';
import { delayProxy } from '../support/delayProxy.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite({ flush: false });

describe('attack: an acquire whose answer is lost with its connection (ioredis re-sends it)', () => {
  it('a timed-out acquisition leaves no lock behind: the key is free again at once, not after its TTL', async () => {
    const proxy = await delayProxy(suite.server.port, 150);
    const client = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
    client.on('error', () => undefined);
    const store = new RedisLockStore(client);
    const locker = createLocker({ store, ttl: 20_000, waitTimeout: 0 });
    const events: LockEvent[] = [];
    const subscription = locker.events$.subscribe((e) => events.push(e));
    try {
      // Warm up: the connection is open and the scripts are loaded on it.
      const warm = await firstValueFrom(locker.acquire('warm-up'));
      await warm.release();
      const id = Number(await client.client('ID'));

      const outcome = firstValueFrom(locker.acquire('k')).then(
        (lease) => ({ lease, error: undefined }),
        (error: unknown) => ({ lease: undefined, error }),
      );
      // The acquire has run in Redis (the key holds a token); its answer is still on the slow link.
      await eventually(async () => (await suite.admin.exists('lock:k')) === 1, 1000, 1);
      await suite.admin.client('KILL', 'ID', String(id));
      const { lease, error } = await outcome;
      await sleep(300);
      const holder = await suite.admin.get('lock:k');
      const pttl = await suite.admin.pttl('lock:k');
      if (lease !== undefined) {
        // Granted after all: the promise holds if it is really ours.
        expect(holder).toBe(lease.token);
        await lease.release();
        return;
      }
      expect(isLockTimeoutError(error)).toBe(true);
      // The acquisition ended without the lock: the key must not stay taken for nobody.
      expect({ holder, pttl, events: events.filter((e) => e.key === 'k').map((e) => e.type) }).toEqual({ holder: null, pttl: -2, events: expect.anything() });
    } finally {
      await locker.close();
      subscription.unsubscribe();
      store.close();
      client.disconnect();
      await proxy.close();
    }
  });

  it('a waiter whose direct take is re-sent gets a fence above every earlier holder (no stale hand-off record)', async () => {
    const proxy = await delayProxy(suite.server.port, 0);
    // B: its connection through the proxy, no wake-up, an attempt every 1.8 s (its place lasts
    // 6 s: no refresh in between); its calls are logged (InterceptStore).
    const clientB = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
    clientB.on('error', () => undefined);
    const redisStoreB = new RedisLockStore(clientB, { wakeUp: false, placeTtl: 6000 });
    const storeB = new InterceptStore(redisStoreB);
    const lockerB = createLocker({ store: storeB, ttl: 1000, waitTimeout: 20_000, retry: { minDelay: 1800, jitter: 0 } });
    const plain = connect(suite.server);
    const storeA = new RedisLockStore(plain);
    const lockerA = createLocker({ store: storeA, ttl: 10_000 });
    const lockerC = createLocker({ store: storeA, ttl: 100, renew: false });
    const deadWaiter = new RedisLockStore(plain, { wakeUp: false, placeTtl: 300 });
    const key = 'fence-resend';
    const lockKey = `lock:${key}`;
    try {
      const a = await firstValueFrom(lockerA.acquire(key));
      const b = firstValueFrom(lockerB.acquire(key));
      await eventually(async () => (await suite.admin.zcard(keysOf(lockKey).line)) === 1, 3000);
      const bToken = (await suite.admin.zrange(keysOf(lockKey).line, '0', '0'))[0]!;
      const idB = Number(await clientB.client('ID'));
      // Just after one of B's attempts was answered (the next is 1.8 s away), A's release hands
      // the key to B (fences f…, recorded in the places' grant); B does not claim it, and it
      // lapses after B's ttl (1 s).
      const answered = storeB.log.filter((c) => c.settledAt !== undefined).length;
      await eventually(() => storeB.log.filter((c) => c.settledAt !== undefined).length > answered, 3000, 1);
      // Another waiter queues behind B and dies there (its place lapses 300 ms later): its place
      // keeps the places hash, and so the record of the hand-off to B, alive.
      expect(await deadWaiter.tryAcquireInLine(lockKey, 'dead-waiter', 1000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
      expect(await a.release()).toBe(true);
      expect(await suite.admin.hget(keysOf(lockKey).places, 'grant')).toMatch(new RegExp(`^${bToken} `));
      await eventually(async () => (await suite.admin.exists(lockKey)) === 0, 2000, 1);

      // C takes the free key (a fence above B's hand-off; the dead waiter's place has lapsed) and
      // its lease ends with its TTL.
      const c = await firstValueFrom(lockerC.acquire(key));
      await eventually(async () => (await suite.admin.exists(lockKey)) === 0, 1000, 1);
      await c.release();

      // B's next attempt takes the free key directly (fresh fences); its answer is lost with the
      // connection and ioredis re-sends the acquire.
      proxy.delayMs = 100;
      await eventually(async () => (await suite.admin.get(lockKey)) === bToken, 3000, 1);
      await suite.admin.client('KILL', 'ID', String(idB));
      const lease = await b;
      expect(lease.token).toBe(bToken);
      // (the record of the lapsed hand-off to B must not be what dates B's fences: taking the key
      // directly drops it)
      expect(await suite.admin.hget(keysOf(lockKey).places, 'grant')).toBeNull();
      expect(await suite.admin.get(lockKey)).toBe(bToken);
      // Fences strictly increase across holders: B came after C.
      expect({ fences: { a: a.fence, c: c.fence, b: lease.fence }, bAboveC: lease.fence > c.fence }).toEqual({
        fences: { a: a.fence, c: c.fence, b: lease.fence },
        bAboveC: true,
      });
      await lease.release();
    } finally {
      await lockerA.close();
      await lockerB.close();
      await lockerC.close();
      redisStoreB.close();
      storeA.close();
      clientB.disconnect();
      plain.disconnect();
      await proxy.close();
    }
  });
});
