/**
 * Attack on the quorum store's hints (f61955d): a refusal notes '<ms> <inbox> <token>' in
 * `rxjs-lock:refused:{key}` on each node, a release whose grant said others were after the key
 * reads the note and PUBLISHes 'freed <token>' on the noted inbox, and the engine cuts its sleep
 * short on such a hint. Real Redis servers, no mocks.
 *
 * What is tried: hostile notes (garbage, a timestamp that does not parse, an older version's
 * token-only note, a note key of another type), tokens with spaces, a client with `keyPrefix`,
 * `store.close()` / `locker.close()` during a wait, a frozen node, pub/sub connections killed
 * under a hot key (mutual exclusion, no unhandled rejection), connections left open after the
 * last wait. Promise: a hint is only ever a hint — it never makes two holders, never fails an
 * acquire or a release, and leaves no connection behind.
 */
import { firstValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import type { RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually, sleep } from '../support/timing.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
});
const lockers: Locker[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

const SLOW_STEP = 1_500;

/** Pub/sub connections on every node. */
async function subscribers(): Promise<number> {
  const lists = await Promise.all(nodes.admins.map((admin) => admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub').then(String)));
  return lists.reduce((sum, list) => sum + list.split('\n').filter((line) => line.includes('sub=')).length, 0);
}

/** A release grant that says others were after the key. */
const busyGrant = (fence = 1) => ({ fence, fences: 1, answeredAt: performance.now(), waiting: 1 });

/** `token` refused by `store` while `holder` holds `key`, then `holder` gives it back saying others waited: the hints `token` heard. */
async function hintsAfterRelease(store: RedlockStore, key: string, token: string): Promise<string[]> {
  const hints: string[] = [];
  const watch = store.watch!(key, token, (signal) => hints.push(signal.type));
  await watch.ready;
  await eventually(() => watch.active, 2_000);
  expect((await store.tryAcquire(key, 'holder', 10_000)).acquired).toBe(true);
  expect((await store.tryAcquire(key, token, 10_000)).acquired).toBe(false);
  expect(await store.release(key, 'holder', busyGrant())).toBe(true);
  await sleep(150);
  watch.stop();
  return hints;
}

describe('attack: hostile input to the hints', () => {
  it('a client with keyPrefix: the hint still reaches the waiter', async () => {
    const store = new (await import('../../src/redis.js')).RedlockStore(nodes.clients({ keyPrefix: 'app:' }), { nodeTimeout: 1_000 });
    try {
      await nodes.connected();
      expect(await hintsAfterRelease(store, 'lock:prefixed', 'w')).toEqual(['freed', 'freed', 'freed']);
    } finally {
      store.close();
    }
  });

  it('a token with spaces is hinted as itself', async () => {
    const store = nodes.store();
    await nodes.connected();
    expect(await hintsAfterRelease(store, 'lock:spaces', 'a b c')).toEqual(['freed', 'freed', 'freed']);
  });

  it('garbage in the note never fails an acquire or a release', async () => {
    const store = nodes.store();
    await nodes.connected();
    const notes = [
      'token-only',
      'abc inbox tok',
      'nan  tok',
      'inf x tok',
      '',
      ' ',
      '  ',
      ' x',
      'x ',
      '1 2',
      '1  ',
      `${'9'.repeat(400)} c t`,
      `1 rxjs-lock:inbox:x ${'t'.repeat(100_000)}`,
    ];
    for (const note of notes) {
      const key = 'lock:garbage';
      await Promise.all(nodes.admins.map((admin) => admin.set(`rxjs-lock:refused:{${key}}`, note, 'PX', 2_000)));
      const grant = await store.tryAcquire(key, 'g', 10_000);
      expect(grant.acquired, JSON.stringify(note.slice(0, 40))).toBe(true);
      expect((await store.tryAcquire(key, 'r', 10_000)).acquired).toBe(false);
      await Promise.all(nodes.admins.map((admin) => admin.set(`rxjs-lock:refused:{${key}}`, note, 'PX', 2_000)));
      expect(await store.release(key, 'g', busyGrant(grant.acquired ? grant.fence : 1))).toBe(true);
    }
  });

  it('a note key of another type (a hash) never fails a release that read it', async () => {
    const store = nodes.store();
    await nodes.connected();
    const key = 'lock:wrongtype';
    const grant = await store.tryAcquire(key, 'g', 10_000);
    expect(grant.acquired).toBe(true);
    await Promise.all(nodes.admins.map((admin) => admin.hset(`rxjs-lock:refused:{${key}}`, 'x', 'y')));
    expect(await store.release(key, 'g', busyGrant(grant.acquired ? grant.fence : 1))).toBe(true);
    expect(await nodes.countKeys()).toBe(0);
    // and an acquisition refused over it
    expect((await store.tryAcquire(key, 'g2', 10_000)).acquired).toBe(true);
    await Promise.all(nodes.admins.map((admin) => admin.del(`rxjs-lock:refused:{${key}}`).then(() => admin.hset(`rxjs-lock:refused:{${key}}`, 'x', 'y'))));
    expect((await store.tryAcquire(key, 'r', 10_000)).acquired).toBe(false);
  });
});

describe('attack: closing while hinted waits go on', () => {
  /** `waiter` waits (slow step) for a key `other` holds; resolves once the waiter was refused. */
  async function waitingFor(key: string, waiter: Locker): Promise<{ other: RedlockStore; waiting: Promise<Lease> }> {
    const other = nodes.store();
    await nodes.connected();
    expect((await other.tryAcquire(`lock:${key}`, 'first', 10_000)).acquired).toBe(true);
    const waiting = firstValueFrom(waiter.acquire(key, { waitTimeout: 10_000 }));
    await eventually(async () => (await nodes.admins[0]!.exists(`rxjs-lock:refused:{lock:${key}}`)) === 1, 2_000, 2);
    return { other, waiting };
  }

  it('store.close() during a wait: the waiter still gets the key (by polling), no connection is left', async () => {
    const store = nodes.store();
    const waiter = createLocker({ store, retry: { minDelay: 300, jitter: 0 } });
    lockers.push(waiter);
    const { other, waiting } = await waitingFor('close:store', waiter);
    await sleep(50);
    store.close();
    await other.release('lock:close:store', 'first', busyGrant());
    const lease = await waiting;
    await lease.release();
    await eventually(async () => (await subscribers()) === 0, 3_000);
  });

  it('locker.close() during a wait: the hint connections close after the linger without store.close()', async () => {
    const store = nodes.store();
    const waiter = createLocker({ store, retry: { minDelay: SLOW_STEP, jitter: 0 } });
    const { other, waiting } = await waitingFor('close:locker', waiter);
    await eventually(async () => (await subscribers()) === 3, 2_000);
    await waiter.close();
    await waiting.catch(() => undefined);
    await other.release('lock:close:locker', 'first', busyGrant());
    await eventually(async () => (await subscribers()) === 0, 4_000);
  });

  it('a frozen node while watching: close() leaves no connection once it thaws', async () => {
    const store = nodes.store();
    const waiter = createLocker({ store, retry: { minDelay: 200, jitter: 0 } });
    lockers.push(waiter);
    const { other, waiting } = await waitingFor('frozen', waiter);
    await eventually(async () => (await subscribers()) === 3, 2_000);
    nodes.servers[2]!.pause();
    try {
      await other.release('lock:frozen', 'first', busyGrant()).catch(() => undefined);
      const lease = await waiting;
      await lease.release().catch(() => undefined);
      store.close();
    } finally {
      nodes.servers[2]!.resume();
    }
    await nodes.connected();
    await eventually(async () => (await subscribers()) === 0, 4_000);
  });
});

describe('attack: a hot key while the hint connections are killed again and again', () => {
  it('never two holders, no unhandled rejection, and no connection left after close', async () => {
    const stores = [nodes.store(), nodes.store(), nodes.store()];
    const ls = stores.map((store) => createLocker({ store }));
    lockers.push(...ls);
    await nodes.connected();
    let holders = 0;
    let overlaps = 0;
    let acquisitions = 0;
    const until = performance.now() + 2_500;
    let killing = true;
    const killer = (async () => {
      while (killing) {
        await sleep(60);
        const admin = nodes.admins[Math.floor(Math.random() * 3)]!;
        await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => undefined);
      }
    })();
    await Promise.all(
      ls.flatMap((locker) =>
        [0, 1].map(async () => {
          while (performance.now() < until) {
            const lease = await firstValueFrom(locker.acquire('hot', { waitTimeout: 10_000 }));
            if (++holders > 1) overlaps++;
            acquisitions++;
            await sleep(1);
            holders--;
            await lease.release();
          }
        }),
      ),
    );
    killing = false;
    await killer;
    expect(overlaps).toBe(0);
    expect(acquisitions).toBeGreaterThan(20);
    await Promise.all(lockers.splice(0).map((locker) => locker.close()));
    for (const store of stores) store.close();
    await eventually(async () => (await subscribers()) === 0, 4_000);
  });
});
