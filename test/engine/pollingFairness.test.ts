/**
 * Turns on a store without a line (the quorum store; here the in-memory store, which has none
 * either): a locker that gives a busy key back must not take it again at once while other lockers
 * (other processes) poll for it with back-off. Before, it asked again the moment its release was
 * answered and won nearly every time: in the bench's hot key over 3 and 5 quorum nodes, loops of
 * other processes waited seconds (max 5–8 s, Jain 0.3–0.8, some timed out at 10 s).
 */
import { turnLoops } from '../support/turnLoops.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type Locker } from '../../src/index.js';

const lockers: Locker[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

describe('a store without a line: lockers take turns on a busy key', () => {
  it('a locker with three busy loops lets a one-loop locker in every turn, and the one-loop locker lets it back', async () => {
    const store = new MemoryLockStore();
    const busy = createLocker({ store });
    const single = createLocker({ store });
    lockers.push(busy, single);
    const until = performance.now() + 1_500;
    const [many, one] = await Promise.all([turnLoops(busy, 'hot', 3, 1, until), turnLoops(single, 'hot', 1, 1, until)]);
    const busyTotal = many.reduce((sum, loop) => sum + loop.acquisitions, 0);
    // Taking turns: the busy locker's turn is a cohort of local passes (up to 12 ms), the other's
    // one acquisition; each waits one back-off step (10–30 ms) after its turn. Before the change
    // the one-loop locker got 0–3 acquisitions and waited up to the whole run.
    expect(one[0]!.acquisitions).toBeGreaterThanOrEqual(15);
    expect(one[0]!.longestWait).toBeLessThan(500);
    expect(busyTotal).toBeGreaterThan(one[0]!.acquisitions);
    for (const loop of many) expect(loop.longestWait).toBeLessThan(500);
  });

  it("the in-memory store's grant says when another token was refused the key within 100 ms (waiting: 1); not for the grantee's own refusal, nor later", async () => {
    let now = 0;
    const store = new MemoryLockStore({ clock: () => now });
    const grant = async (token: string) => {
      const result = await store.tryAcquire('k', token, 10_000);
      if (!result.acquired) throw new Error(`${token} refused`);
      await store.release('k', token);
      return result.waiting;
    };
    expect(await grant('a')).toBeUndefined();
    await store.tryAcquire('k', 'h', 10_000);
    expect((await store.tryAcquire('k', 'b', 10_000)).acquired).toBe(false);
    await store.release('k', 'h');
    now += 99;
    expect(await grant('c')).toBe(1);
    await store.tryAcquire('k', 'h2', 10_000);
    expect((await store.tryAcquire('k', 'd', 10_000)).acquired).toBe(false);
    await store.release('k', 'h2');
    expect(await grant('d')).toBeUndefined();
    await store.tryAcquire('k', 'h3', 10_000);
    expect((await store.tryAcquire('k', 'e', 10_000)).acquired).toBe(false);
    await store.release('k', 'h3');
    now += 100;
    expect(await grant('f')).toBeUndefined();
    store.close();
  });
});
