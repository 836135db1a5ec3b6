/**
 * Attack on reentrancy's one promise: two streams not nested in each other never hold one key at
 * the same time. Top-level streams of many shapes run at once on few keys — nested joins,
 * `mergeMap` fan-out of nested streams, `exclusivePerKey` with concurrency > 1, `retry` and
 * `repeat` around a reentrant withLock, acquire() leases whose holders then take other keys,
 * nested streams that outlive their outer work — on the in-memory store and on Redis with local
 * passes (cohorts) on. Each top-level stream is a "root"; nested streams carry their root's id.
 * An overlap counter per key checks that only one root is inside at any time, and the store's
 * release count that each store lease is given back exactly once.
 */
import { catchError, defer, EMPTY, from, lastValueFrom, map, mergeMap, repeat, retry, timer, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, exclusivePerKey, MemoryLockStore, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { LockStore } from '../../src/store/LockStore.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { prng } from '../engine/attackFuzz.js';

const suite = redisSuite();
const KEYS = ['a', 'b', 'c'];

class Overlap {
  private readonly inside = new Map<string, Map<number, number>>();
  readonly violations: string[] = [];
  enter(key: string, root: number): void {
    const roots = this.inside.get(key) ?? new Map<number, number>();
    this.inside.set(key, roots);
    for (const other of roots.keys()) if (other !== root) this.violations.push(`${key}: root ${root} entered while root ${other} was inside`);
    roots.set(root, (roots.get(root) ?? 0) + 1);
  }
  leave(key: string, root: number): void {
    const roots = this.inside.get(key)!;
    const n = roots.get(root)! - 1;
    if (n === 0) roots.delete(root);
    else roots.set(root, n);
  }
}

function countingReleases(store: LockStore): { store: LockStore; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const release = store.release.bind(store);
  store.release = (key, token) => {
    const id = `${key}/${token}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
    return release(key, token);
  };
  return { store, counts };
}

/** Runs 60 top-level streams (roots `base + 1…`) on `locker`, checked by `overlap` (shared by the lockers of one run). */
async function run(locker: Locker, seed: number, overlap = new Overlap(), base = 0): Promise<{ violations: string[]; outcomes: string[] }> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const opts = { waitTimeout: 20_000, ttl: 2_000 };
  /** Protected work on `key` for `root`: checks on entry and after an async pause. */
  const work = (key: string, root: number, ms: number) =>
    defer(async () => {
      overlap.enter(key, root);
      try {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return key;
      } finally {
        overlap.leave(key, root);
      }
    });
  /** Nested streams inside the work of `root` holding `key`. */
  const nested = (key: string, root: number) => {
    const shape = Math.floor(random() * 3);
    if (shape === 0) return work(key, root, 1).pipe(locker.withLock(key, opts));
    if (shape === 1)
      return from([1, 2, 3]).pipe(
        mergeMap(() => work(key, root, Math.floor(random() * 3)).pipe(locker.withLock(key, opts))),
        toArray(),
        map(() => key),
      );
    return defer(() => locker.using(key, () => work(key, root, 2), opts));
  };
  const shapes = [
    // nested joins
    (root: number) => {
      const key = pick(KEYS);
      return defer(() => nested(key, root)).pipe(
        mergeMap(() => work(key, root, 2)),
        locker.withLock(key, opts),
      );
    },
    // siblings (not nested) on one key, fanned out at top level
    (root: number) => {
      const key = pick(KEYS);
      return from([0, 1, 2]).pipe(mergeMap((i) => work(key, root * 10 + i + 1_000_000, 1).pipe(locker.withLock(key, opts))));
    },
    // retry / repeat of a reentrant withLock
    (root: number) => {
      const key = pick(KEYS);
      let tries = 0;
      return defer(() => (++tries === 1 ? work(key, root, 1).pipe(mergeMap(() => Promise.reject(new Error('once')))) : work(key, root, 1))).pipe(
        locker.withLock(key, opts),
        retry(2),
        repeat(2),
      );
    },
    // exclusivePerKey, concurrency 2, messages of every key; each message nests a join
    (root: number) =>
      from(KEYS.concat(KEYS)).pipe(
        exclusivePerKey(
          (key) => key,
          (key) => work(key, root * 100 + KEYS.indexOf(key) + 2_000_000, 1).pipe(mergeMap(() => nested(key, root * 100 + KEYS.indexOf(key) + 2_000_000))),
          { locker, concurrency: 2, ...opts },
        ),
      ),
    // acquire(): the holder, told of its lease, takes another key (ordered: no deadlock)
    (root: number) => {
      const [first, second] = [...KEYS]
        .sort(() => random() - 0.5)
        .slice(0, 2)
        .sort() as [string, string];
      return locker.acquire(first, opts).pipe(
        mergeMap((lease) =>
          work(first, root, 1).pipe(
            mergeMap(() => work(second, root, 2).pipe(locker.withLock(second, opts))),
            mergeMap(async (v) => (await lease.release(), v)),
          ),
        ),
      );
    },
    // a nested stream that outlives its outer work
    (root: number) => {
      const key = pick(KEYS);
      return locker.using(
        key,
        () => {
          work(key, root, 15)
            .pipe(locker.withLock(key, opts))
            .subscribe({ error: () => undefined });
          return timer(1).pipe(map(() => key));
        },
        opts,
      );
    },
  ];
  const outcomes: string[] = [];
  await Promise.all(
    Array.from({ length: 60 }, (_, root) => {
      const shape = pick(shapes);
      const delay = Math.floor(random() * 40);
      return lastValueFrom(
        timer(delay).pipe(
          mergeMap(() => shape(base + root + 1)),
          catchError((e: unknown) => (outcomes.push(String(e)), EMPTY)),
        ),
        { defaultValue: undefined },
      );
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 100)); // the outliving nested streams end
  return { violations: overlap.violations, outcomes };
}

describe('attack: reentrant streams never overlap unless nested', () => {
  it('in memory, with local passes', async () => {
    for (const seed of [1, 2, 3]) {
      const { store, counts } = countingReleases(new MemoryLockStore());
      const locker = createLocker({ store, reentrant: true });
      const { violations, outcomes } = await run(locker, seed);
      await locker.close();
      expect(violations).toEqual([]);
      expect(outcomes).toEqual([]);
      expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    }
  }, 60_000);

  it('on Redis, two lockers (two processes) and local passes', async () => {
    for (const seed of [4, 5]) {
      const clients = [connect(suite.server), connect(suite.server)];
      const parts = clients.map((client) => countingReleases(new RedisLockStore(client)));
      const lockers = parts.map(({ store }) => createLocker({ store, reentrant: true }));
      const overlap = new Overlap();
      const overlapRuns = await Promise.all(lockers.map((locker, i) => run(locker, seed * 10 + i, overlap, i * 1_000)));
      await Promise.all(lockers.map((l) => l.close()));
      for (const part of parts) (part.store as RedisLockStore).close();
      clients.forEach((c) => c.disconnect());
      for (const { violations, outcomes } of overlapRuns) {
        expect(violations).toEqual([]);
        expect(outcomes).toEqual([]);
      }
      for (const { counts } of parts) expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    }
  }, 60_000);
});
