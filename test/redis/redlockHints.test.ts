/**
 * Hints on the quorum store (no line): when a busy key is given back, each node tells the
 * acquisition it refused last among those that listen (through that store's inbox channel,
 * subscribed on each node) that the key is free, and its locker asks at once instead of at the end
 * of its back-off step. Without the hint a waiter finds a freed key only at its next poll: with
 * the default retry policy 10–30 ms later, and with a slow one (seconds) that much later.
 *
 * The release reads the hint note in the MGET that reads the key, so an uncontended pair costs
 * the nodes nothing more; a hint is never a grant (the waiter still asks, and whoever asks first
 * takes the key); a retry function keeps its own pace.
 */
import { firstValueFrom, timer } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, LockOptionsError, type Locker } from '../../src/index.js';
import { RedlockStore, type RedlockStore as Store } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually, sleep } from '../support/timing.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
  await Promise.all(nodes.admins.map((admin) => admin.config('RESETSTAT')));
});
const lockers: Locker[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

/** A waiter's back-off step, far longer than a hinted hand-off takes. */
const SLOW_STEP = 1_500;

/**
 * How long after a release a waiter of another store, with `waiterOptions`, takes the key (ms):
 * the waiter was refused the key (the nodes note it) and sleeps its back-off step.
 */
async function handOffMs(key: string, waiterOptions: Parameters<typeof createLocker>[0]): Promise<number> {
  const holderLocker = createLocker({ store: nodes.store() });
  const waiter = createLocker(waiterOptions);
  lockers.push(holderLocker, waiter);
  await nodes.connected();
  const holder = await firstValueFrom(holderLocker.acquire(key));
  const waiting = firstValueFrom(waiter.acquire(key, { waitTimeout: 10_000 }));
  await sleep(150); // (refused, and its hint channel up: it subscribed after its refusal)
  const releasedAt = performance.now();
  await holder.release();
  const lease = await waiting;
  const ms = performance.now() - releasedAt;
  await lease.release();
  return ms;
}

describe('RedlockStore: hints to a waiter when a busy key is given back', () => {
  it('a waiter with a slow back-off takes the key within moments of the release, not at the end of its step', async () => {
    const ms = await handOffMs('hint:fast', { store: nodes.store(), retry: { minDelay: SLOW_STEP, jitter: 0 } });
    if (process.env.FIG) console.log('FIG hinted hand-off ms', ms.toFixed(1));
    expect(ms).toBeLessThan(SLOW_STEP / 3);
  });

  it('without wakeUp the same waiter finds the key only at its next poll (what the hint saves)', async () => {
    expect(await handOffMs('hint:off', { store: nodes.store({ wakeUp: false }), retry: { minDelay: SLOW_STEP, jitter: 0 } })).toBeGreaterThan(SLOW_STEP / 2);
  });

  it('a retry function keeps its own pace: its waiter takes no hint, and listens for none (no connection opened)', async () => {
    const store = nodes.store();
    const watch = store.watch!;
    let watches = 0;
    Object.defineProperty(store, 'watch', {
      get: () => (key: string, token: string, listener: Parameters<typeof watch>[2]) => {
        watches++;
        return watch(key, token, listener);
      },
    });
    expect(await handOffMs('hint:function', { store, retry: () => timer(SLOW_STEP) })).toBeGreaterThan(SLOW_STEP / 2);
    expect(watches).toBe(0);
  });

  it('an uncontended pair sends no hint, and its release reads the key and the hint note in its one MGET', async () => {
    const pairs = 20;
    /** The commands the nodes ran for `pairs` uncontended pairs of a locker on `store`. */
    const commandsOf = async (store: Store, key: string): Promise<string[]> => {
      const locker = createLocker({ store });
      lockers.push(locker);
      await nodes.connected();
      await (await firstValueFrom(locker.acquire(key))).release(); // (scripts loaded, fences agreed)
      await Promise.all(nodes.admins.map((admin) => admin.config('RESETSTAT')));
      for (let i = 0; i < pairs; i++) await (await firstValueFrom(locker.acquire(key))).release();
      const stats = await Promise.all(nodes.admins.map((admin) => admin.info('commandstats')));
      return stats.map((info) =>
        [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)]
          .map(([, name, calls]) => `${name}=${calls}`)
          .filter((c) => !/^(info|config)/.test(c))
          .sort()
          .join(' '),
      );
    };
    for (const node of await commandsOf(nodes.store(), 'hint:none')) {
      expect(node).not.toMatch(/publish/);
      // one read per acquire and per release: the acquire's MGET (fence record, refusal note), the
      // release's MGET (the key and the hint note, as the key alone was read before); a GET only
      // in a fence raise (a script call beyond the pairs', when the nodes' fences disagreed)
      const count = (name: string) => Number(new RegExp(`(?:^| )${name}=(\\d+)`).exec(node)?.[1] ?? 0);
      expect(count('mget')).toBe(2 * pairs);
      expect(count('get')).toBeLessThanOrEqual(count('evalsha') - 2 * pairs);
    }
  });

  it('a release hints the acquisition that listens and was refused last (within 2 s), and not the releaser itself', async () => {
    const store = nodes.store();
    await nodes.connected();
    const hints: string[] = [];
    const watchB = store.watch!('k', 'b', (signal) => hints.push(`b:${signal.type}`));
    const watchC = store.watch!('k', 'c', (signal) => hints.push(`c:${signal.type}`));
    await Promise.all([watchB.ready, watchC.ready]);
    await eventually(() => watchB.active && watchC.active, 2_000);
    const key = 'lock:hint:last';
    expect((await store.tryAcquire(key, 'h', 10_000)).acquired).toBe(true);
    expect((await store.tryAcquire(key, 'c', 10_000)).acquired).toBe(false);
    expect((await store.tryAcquire(key, 'b', 10_000)).acquired).toBe(false);
    await sleep(300); // (past the turns' 100 ms: the hint note lasts 2 s)
    await store.release(key, 'h');
    await eventually(() => hints.length >= 3, 2_000);
    await sleep(50);
    // one hint per node, to b only
    expect(hints).toEqual(['b:freed', 'b:freed', 'b:freed']);
    // a release whose token was the one refused last hints nobody
    hints.length = 0;
    expect((await store.tryAcquire(key, 'b', 10_000)).acquired).toBe(true);
    await store.release(key, 'b');
    await sleep(100);
    expect(hints).toEqual([]);
    watchB.stop();
    watchC.stop();
  });

  it('a node whose hint connection is killed keeps the others hinting; close() closes every hint connection', async () => {
    const store: Store = nodes.store();
    await nodes.connected();
    const hints: string[] = [];
    const watch = store.watch!('k', 'w', (signal) => hints.push(signal.type));
    await watch.ready;
    await eventually(async () => (await nodes.pubsubConnections()) === 3, 2_000);
    await nodes.admins[0]!.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const key = 'lock:hint:killed';
    expect((await store.tryAcquire(key, 'h', 10_000)).acquired).toBe(true);
    expect((await store.tryAcquire(key, 'w', 10_000)).acquired).toBe(false);
    await store.release(key, 'h');
    await eventually(() => hints.filter((type) => type === 'freed').length >= 2, 2_000);
    expect(watch.active).toBe(true);
    watch.stop();
    store.close();
    await eventually(async () => (await nodes.pubsubConnections()) === 0, 2_000);
  });

  it('refuses a wakeUp that is not a boolean, naming it', () => {
    expect(() => new RedlockStore(nodes.clients(), { wakeUp: 'yes' as unknown as boolean })).toThrow(LockOptionsError);
    expect(() => new RedlockStore(nodes.clients(), { wakeUp: 1 as unknown as boolean })).toThrow(/wakeUp.*true or false/);
  });
});
