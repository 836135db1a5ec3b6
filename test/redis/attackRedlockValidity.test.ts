/**
 * Attacks on the quorum store's validity (RedlockStore over 3 private Redis servers): a fence-raise
 * round (needed when the nodes' blocks disagree: here no fence floor is sent) held back on every node (the raise command dispatched late to a real server) must shorten
 * the lease's deadline by the time it took, or refuse the grant when nothing is left; and the
 * engine's deadline never passes the validity the store measured.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { COMMANDS } from '../../src/backends/redis/protocol/commands.js';
import { RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { sleep } from '../support/timing.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `attack-validity:${what}:${++n}`;
const holders = (key: string) => Promise.all(nodes.admins.map((admin) => admin.get(key)));

/**
 * `client`, with its fence-raise script sent to the server `delayMs` late, and its acquires sent
 * without the fence floor (as by a store that has not learnt the nodes' clocks yet), so that every
 * grant needs the raise: the nodes answer blocks from their own clocks, which disagree.
 */
function slowRaise(client: Redis, delayMs: number, raised?: number[]): Redis {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      // (the quorum store calls its scripts as the commands registered for them: keys…, args…)
      if (property === COMMANDS.raiseFence && typeof value === 'function') {
        const raise = value as (...a: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => {
          raised?.push(performance.now());
          return sleep(delayMs).then(() => raise.apply(target, args));
        };
      }
      if (property === COMMANDS.quorumAcquire && typeof value === 'function') {
        const acquire = value as (...a: unknown[]) => Promise<unknown>;
        // (lock key, fence key, refused key, token, ttl, fences, floor)
        return (...args: unknown[]) => acquire.apply(target, [...args.slice(0, 6), 0]);
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('RedlockStore validity: a slow fence raise', () => {
  it('the time the raise took comes off the lease: deadline ≤ send time + ttl − raise time − drift', async () => {
    const raised: number[] = [];
    const store = new RedlockStore(
      nodes.clients().map((client) => slowRaise(client, 300, raised)),
      { nodeTimeout: 2_000 },
    );
    await nodes.connected();
    const locker = createLocker({ store, ttl: 2_000, renew: false, commandTimeout: 5_000 });
    const key = fresh('slow-raise');
    const lease = await firstValueFrom(locker.acquire(key));
    // The acquire was sent before the first raise call (raised[0]), and the raise took 300 ms
    // (1 ms less at worst: a timer fires on whole milliseconds of its own clock).
    expect(raised.length).toBeGreaterThan(0);
    expect(lease.validUntil).toBeLessThanOrEqual(Math.min(...raised) + 2_000 - 300 - 22 + 1);
    expect(lease.validUntil).toBeGreaterThan(performance.now());
    await lease.release();
    await locker.close();
    store.close();
  });

  it('a raise slower than the TTL: no grant, and the key is given back on every node', async () => {
    const store = new RedlockStore(
      nodes.clients().map((client) => slowRaise(client, 400)),
      { nodeTimeout: 2_000 },
    );
    await nodes.connected();
    const key = fresh('too-slow');
    expect(await store.tryAcquire(key, 't', 300)).toMatchObject({ acquired: false });
    expect(await holders(key)).toEqual([null, null, null]);
    // and through a locker: it keeps trying and times out, holding nothing
    const locker = createLocker({ store, ttl: 300, waitTimeout: 1_000, commandTimeout: 5_000 });
    const error = await firstValueFrom(locker.acquire(key)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    await sleep(50);
    expect(await holders(`lock:${key}`)).toEqual([null, null, null]);
    await locker.close();
    store.close();
  });
});
