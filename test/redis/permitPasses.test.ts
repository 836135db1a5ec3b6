/**
 * A semaphore's permits passed on in-process, on Redis (the scripts reserve a block of fences per
 * shared grant; src/engine/shared/PermitPasses.ts hands them out): a grant from the store's line,
 * announced on the waiter's inbox, carries its block, so the woken holder can pass on too; a store
 * grant after a chain of passes has a fence above every fence handed out along it; two lockers
 * contending on one semaphore both get their turns and never hold more than the limit; the passed
 * waiters' places are gone from the line; nothing is left in Redis after.
 */
import { firstValueFrom, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { type Lease, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { suiteLocker, type SuiteLocker } from '../support/suiteLocker.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** Turns that outlast a slow test machine's steps (the default turn is 12 ms from the store grant). */
const LONG_TURNS = { maxPasses: 256, maxMs: 60_000, roundMs: 60_000 };

function newLocker(cohort: typeof LONG_TURNS | undefined = undefined): SuiteLocker {
  return suiteLocker(suite, { retry: { minDelay: 5, jitter: 5 }, ...(cohort === undefined ? {} : { cohort }) });
}

function leaseOf(lease$: Observable<Lease>): Promise<Lease> {
  return firstValueFrom(lease$);
}

async function waitingInLine(store: RedisLockStore, key: string, n: number): Promise<void> {
  await eventually(async () => ((await store.inspectShared(`lock:${key}`))?.waiting ?? 0) === n, 3000, 5, `${n} waiting for ${key}`);
}

describe('semaphore permits passed on in-process, on Redis', () => {
  it("a grant from the line carries its fence block on the inbox: the woken holder passes on to its process's next waiter", async () => {
    const a = newLocker(LONG_TURNS);
    const b = newLocker(LONG_TURNS);
    const held = await leaseOf(a.locker.acquirePermit('s', { limit: 1 }));
    const first = leaseOf(b.locker.acquirePermit('s', { limit: 1 }));
    await waitingInLine(b.store, 's', 1);
    const second = leaseOf(b.locker.acquirePermit('s', { limit: 1 }));
    await waitingInLine(b.store, 's', 2);

    await held.release(); // a has nobody waiting: back to the store, whose line grants b's first waiter
    const bFirst = await first;
    expect(bFirst.fence).toBeGreaterThan(held.fence);
    expect(bFirst.token).not.toBe(held.token);
    await bFirst.release();
    const bSecond = await second;
    expect(bSecond.token).toBe(bFirst.token); // passed on, not granted again
    expect(bSecond.fence).toBe(bFirst.fence + 1);
    await waitingInLine(b.store, 's', 0); // its place was given up
    const acquired = b.events.filter((e): e is Extract<LockEvent, { type: 'acquired' }> => e.type === 'acquired');
    expect(acquired.map((e) => e.passed)).toEqual([false, true]);
    await bSecond.release();
    await eventually(async () => (await suite.admin.keys('*')).length === 0, 3000, 5, 'no key left');
  });

  it('a store grant after a chain of passes has a fence above every fence handed out along it', async () => {
    const a = newLocker(LONG_TURNS);
    const b = newLocker(LONG_TURNS);
    const start = await leaseOf(a.locker.acquirePermit('s', { limit: 1 }));
    const chain: Lease[] = [start];
    const local = [0, 1, 2].map(() => leaseOf(a.locker.acquirePermit('s', { limit: 1 })));
    await waitingInLine(a.store, 's', 3);
    const other = leaseOf(b.locker.acquirePermit('s', { limit: 1 }));
    await waitingInLine(a.store, 's', 4);
    for (const next of local) {
      await chain.at(-1)!.release();
      chain.push(await next);
    }
    expect(new Set(chain.map((l) => l.token)).size).toBe(1);
    expect(chain.map((l) => l.fence - start.fence)).toEqual([0, 1, 2, 3]);
    await chain.at(-1)!.release();
    const granted = await other;
    expect(granted.token).not.toBe(start.token);
    expect(granted.fence).toBeGreaterThan(chain.at(-1)!.fence);
    await granted.release();
  });

  it('two lockers contending on one semaphore: never more holders than the limit, both get turns, nothing left after', async () => {
    const lockers = [newLocker(), newLocker()];
    let inside = 0;
    let most = 0;
    const byLocker = [0, 0];
    const fences = new Set<number>();
    const deadline = performance.now() + 1_500;
    await Promise.all(
      lockers.flatMap(({ locker }, index) =>
        [0, 1, 2].map(async () => {
          while (performance.now() < deadline) {
            const lease = await leaseOf(locker.acquirePermit('hot', { limit: 2 }));
            inside++;
            most = Math.max(most, inside);
            expect(fences.has(lease.fence)).toBe(false);
            fences.add(lease.fence);
            byLocker[index]!++;
            await sleep(1);
            inside--;
            await lease.release();
          }
        }),
      ),
    );
    expect(most).toBeLessThanOrEqual(2);
    const total = byLocker[0]! + byLocker[1]!;
    for (const n of byLocker) expect(n / total).toBeGreaterThan(0.25);
    const passed = lockers.flatMap(({ events }) => events.filter((e) => e.type === 'acquired' && e.passed));
    expect(passed.length).toBeGreaterThan(0);
    await eventually(async () => (await suite.admin.keys('*')).length === 0, 3000, 5, 'no key left');
  });
});
