/**
 * Blocks of fences as the attack suites on fence order see them (attackFenceRecord*.test.ts): a
 * grant's block, the check that every block starts above every earlier one, and a Redis store on
 * a suite's server whose scripts are already loaded, so that pipelined calls run back to back.
 */
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { AcquireResult } from '../../src/store/LockStore.js';
import { connect } from './redis.js';
import type { RedisSuite } from './redisSuite.js';

/** The fence seed of a server's clock now, as lua/lib/clock.lua computes it (4 per µs since 2025-01-01). */
export async function seedOf(admin: Redis): Promise<number> {
  const [sec, usec] = await admin.time();
  return (Number(sec) - 1735689600) * 4_000_000 + Number(usec) * 4;
}

/** The fences one grant reserved: `first … last`. */
export interface Block {
  readonly who: string;
  readonly first: number;
  readonly last: number;
}

/** The block of grant `r` (which asked for `asked` fences); throws when it was refused. */
export function blockOf(who: string, r: AcquireResult, asked: number): Block {
  if (!r.acquired) throw new Error(`${who} was refused: ${JSON.stringify(r)}`);
  const n = r.fences ?? asked;
  return { who, first: r.fence, last: r.fence + n - 1 };
}

/** Every block's first fence above every fence of every earlier block (in grant order), all safe integers. */
export function expectIncreasing(blocks: readonly Block[]): void {
  let highest: Block | undefined;
  for (const b of blocks) {
    expect(Number.isSafeInteger(b.first), `${b.who}'s fence ${b.first} is a safe integer`).toBe(true);
    expect(Number.isSafeInteger(b.last), `${b.who}'s last fence ${b.last} is a safe integer`).toBe(true);
    if (highest !== undefined) {
      expect(b.first, `${b.who}'s first fence ${b.first} vs ${highest.who}'s block end ${highest.last} (by ${highest.last - b.first + 1})`).toBeGreaterThan(
        highest.last,
      );
    }
    if (highest === undefined || b.last > highest.last) highest = b;
  }
}

/** A store on the suite's server (on `client`, or a new connection), closed after the test. */
export function storeOn(suite: RedisSuite, options: RedisLockStoreOptions = {}, client?: Redis): { store: RedisLockStore; redis: Redis } {
  const redis = client ?? connect(suite.server);
  const store = new RedisLockStore(redis, options);
  suite.closers.push(() => {
    store.close();
    redis.disconnect();
  });
  return { store, redis };
}

/** Runs every script once on `store`'s connection, so later calls go by SHA and run back to back. */
export async function warmScripts(store: RedisLockStore): Promise<void> {
  await store.tryAcquire('warm-up', 'w', 1000);
  await store.tryAcquireInLine('warm-up', 'v', 1000, 1, 'keep');
  await store.release('warm-up', 'w');
  await store.release('warm-up', 'v');
  await store.extend('warm-up', 'x', 10);
}
