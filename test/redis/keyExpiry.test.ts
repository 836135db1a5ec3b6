/**
 * Issue #10, per-key state expires: before, every key ever locked left its fence counter in Redis
 * forever (200,000 distinct keys → 200,000 keys of ~74 B each). Once locks are released and their
 * TTLs have passed, Redis must hold nothing for them.
 *
 * On a real Redis: 200,000 distinct keys taken and released through a locker; contended keys whose
 * waiters queued in the Redis line (handed the key, timed out in line, or dead in line — their
 * connection dropped — so a release hands the key to a waiter that never takes it); leases that
 * expire instead of being released (`ttl: 200`, `renew: false`). After the TTLs (and twice the
 * store's `placeTtl` of 200 ms, the line's lifetime) the server holds no key at all, its memory is
 * back near where it started, and the lockers keep no state for any key.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { LockEngine } from '../../src/engine/LockEngine.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const DISTINCT_KEYS = 200_000;
const CHUNK = 2_000;
const PLACE_TTL = 200;
/** How far above its starting point used_memory may stay: a fraction of what the keys would take. */
const MEMORY_SLACK = 1024 * 1024;

// A small replication backlog: Redis 7 fills a 1 MB one even without replicas, which would
// blur the memory comparison.
const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no', '--repl-backlog-size', '16kb'], flush: false });
/** Processes opened by the tests, closed after the last one. */
const opened: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const close of opened.reverse()) await close();
});

interface Process {
  readonly locker: Locker;
  readonly redis: Redis;
  readonly events: LockEvent[];
  readonly close: () => Promise<void>;
}

function newProcess(): Process {
  const redis = connect(suite.server);
  const store = new RedisLockStore(redis, { placeTtl: PLACE_TTL, lingerMs: 0 });
  const locker = createLocker({ store, ttl: 10_000 });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await locker.close();
    store.close();
    redis.disconnect();
  };
  opened.push(close);
  return { locker, redis, events, close };
}

/** used_memory from INFO memory, in bytes. */
async function usedMemory(): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await suite.admin.info('memory'))?.[1]);
}

describe('per-key state in Redis', () => {
  it('is all gone once locks are released (or expired) and their TTLs have passed: 200,000 distinct keys, lines, expired leases', async () => {
    const p1 = newProcess();
    const p2 = newProcess();
    const p3 = newProcess();
    // Scripts loaded and connections open before the baseline.
    for (const p of [p1, p2, p3]) await lastValueFrom(p.locker.using('warm-up', async () => 0));
    await eventually(async () => (await suite.admin.dbsize()) === 0, 5000);
    const memoryBefore = await usedMemory();

    // 200,000 distinct keys, taken and released.
    const started = performance.now();
    let releasedTrue = 0;
    for (let from = 0; from < DISTINCT_KEYS; from += CHUNK) {
      const results = await Promise.all(
        Array.from({ length: CHUNK }, (_, i) => firstValueFrom(p1.locker.acquire(`job:${from + i}`)).then((lease) => lease.release())),
      );
      releasedTrue += results.filter(Boolean).length;
    }
    expect(releasedTrue).toBe(DISTINCT_KEYS);
    const distinctMs = performance.now() - started;

    // Contended keys: p1 holds, p2 waits in the Redis line and is handed the key.
    const handed = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const key = `contended:${i}`;
        const holder = await firstValueFrom(p1.locker.acquire(key));
        const waiting = firstValueFrom(p2.locker.acquire(key, { waitTimeout: 10_000 }));
        await eventually(async () => (await suite.admin.zcard(helperKey(`lock:${key}`, 'line'))) === 1, 5000);
        expect(await holder.release()).toBe(true);
        const next = await waiting;
        expect(next.fence).toBeGreaterThan(holder.fence);
        return next.release();
      }),
    );
    expect(handed).toEqual(handed.map(() => true));

    // Waiters that time out in line.
    const timedOut = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const key = `timeout:${i}`;
        const holder = await firstValueFrom(p1.locker.acquire(key));
        const error = await firstValueFrom(p2.locker.acquire(key, { waitTimeout: 150 })).catch((e: unknown) => e);
        await holder.release();
        return isLockTimeoutError(error);
      }),
    );
    expect(timedOut).toEqual(timedOut.map(() => true));

    // Waiters that die in line: their connection drops while they wait, so they never leave it,
    // and the holder's release hands the key to a waiter that never takes it.
    const deadKeys = Array.from({ length: 20 }, (_, i) => `dead:${i}`);
    const holders = await Promise.all(deadKeys.map((key) => firstValueFrom(p1.locker.acquire(key))));
    const doomed = deadKeys.map((key) => firstValueFrom(p3.locker.acquire(key, { waitTimeout: 10_000 })).catch(() => undefined));
    await eventually(async () => (await Promise.all(deadKeys.map((key) => suite.admin.zcard(helperKey(`lock:${key}`, 'line'))))).every((n) => n === 1), 5000);
    p3.redis.disconnect();
    const handedToDead = await Promise.all(holders.map((holder) => holder.release()));
    expect(handedToDead).toEqual(handedToDead.map(() => true));
    // Keys handed to a dead waiter belong to it until its place would have lapsed (keys whose
    // place had lapsed already were simply deleted).
    expect(await suite.admin.exists(...deadKeys.map((key) => `lock:${key}`))).toBeGreaterThan(0);
    await p3.close();
    await Promise.all(doomed);

    // Leases that expire instead of being released.
    const expiring = await Promise.all(Array.from({ length: 50 }, (_, i) => firstValueFrom(p2.locker.acquire(`expiring:${i}`, { ttl: 200, renew: false }))));
    await eventually(() => p2.events.filter((e) => e.type === 'lost').length === expiring.length, 5000);
    expect(expiring.every((lease) => !lease.held)).toBe(true);

    // Past every TTL (leases: 200 ms; lines and places: 2 × placeTtl; hand-offs: ≤ placeTtl),
    // Redis holds nothing. (DBSIZE counts keys past their TTL until the active expiry cycle, ten
    // times a second, reaps them: give it time.)
    await sleep(2 * PLACE_TTL + 100);
    await eventually(async () => (await suite.admin.dbsize()) === 0, 10_000, 50);
    // The expired leases' releases, late, find nothing and leave nothing.
    expect(await Promise.all(expiring.map((lease) => lease.release()))).toEqual(expiring.map(() => false));
    expect(await suite.admin.dbsize()).toBe(0);

    // Memory back near where it started (Redis shrinks its emptied hash tables in the background).
    // 200,000 fence counters of ~74 B would be ~15 MB; what stays (a few hundred KB here, the same
    // for 50,000 keys as for 200,000) is the server's own allocations, not per-key state.
    let memoryAfter = 0;
    await eventually(async () => (memoryAfter = await usedMemory()) - memoryBefore < MEMORY_SLACK, 10_000, 100).catch(() => undefined);
    expect(memoryAfter - memoryBefore, `used_memory ${memoryBefore} → ${memoryAfter}`).toBeLessThan(MEMORY_SLACK);

    // And the lockers keep nothing per key.
    for (const p of [p1, p2]) expect((p.locker as LockEngine).liveKeys).toBe(0);
    if (process.env.KEY_EXPIRY_VERBOSE) console.log({ distinctMs, memoryBefore, memoryAfter });
  }, 60_000);
});
