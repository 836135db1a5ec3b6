/**
 * Attacks on the quorum store (RedlockStore) over 5 private Redis servers that the tests pause
 * (SIGSTOP/SIGCONT), kill and restart empty: grants that arrive after an attempt gave up, renewals
 * that reach only a minority (and run late on thawed nodes), unsubscribing and closing while a round
 * is out, and a restart without persistence (the delayed-restart rule, shown both ways).
 */
import { firstValueFrom, lastValueFrom, map, timer, type Subscription } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, type LockEvent, type LockLostError } from '../../src/index.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually, sleep } from '../support/timing.js';

const nodes = quorumNodes(5);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `attack-faults:${what}:${++n}`;

/** What each node holds for `key` (null when nothing). */
const holders = (key: string) => Promise.all(nodes.admins.map((admin) => admin.get(key)));

describe('RedlockStore under faults: late grants', () => {
  it('a refused attempt whose grants on 2 frozen nodes run after it gave up leaves nothing there, and the next holder gets every node', async () => {
    const store = nodes.store({ nodeTimeout: 200 });
    await nodes.connected();
    const key = fresh('late-grant');
    // H holds the key on nodes 2..4 (a quorum); nodes 0 and 1 are frozen
    await Promise.all(nodes.admins.slice(2).map((admin) => admin.set(key, 'H', 'PX', 30_000)));
    nodes.servers[0]!.pause();
    nodes.servers[1]!.pause();
    try {
      // A is refused by the quorum that answered; its grants on 0 and 1 are still out
      expect(await store.tryAcquire(key, 'A', 30_000)).toMatchObject({ acquired: false });
      // H goes; B wins on 2..4 while 0 and 1 are still frozen
      await Promise.all(nodes.admins.slice(2).map((admin) => admin.del(key)));
      const b = await store.tryAcquire(key, 'B', 30_000);
      expect(b).toMatchObject({ acquired: true });
    } finally {
      nodes.servers[0]!.resume();
      nodes.servers[1]!.resume();
    }
    // thawed, nodes 0 and 1 ran A's grant, A's give-back and B's grant, in that order
    await eventually(async () => (await holders(key)).every((holder) => holder === 'B'), 5_000);
    expect(await store.release(key, 'B')).toBe(true);
    await eventually(async () => (await holders(key)).every((holder) => holder === null), 5_000);
  });

  it('unsubscribing while the grant round waits on a frozen majority leaves no key on any node once thawed', async () => {
    const locker = createLocker({ store: nodes.store({ nodeTimeout: 800 }), ttl: 30_000, commandTimeout: 5_000 });
    await nodes.connected();
    const key = fresh('unsubscribe');
    nodes.servers[0]!.pause();
    nodes.servers[1]!.pause();
    nodes.servers[2]!.pause();
    let subscription: Subscription | undefined;
    const seen: unknown[] = [];
    try {
      subscription = locker.acquire(key).subscribe({ next: (v) => seen.push(v), error: (e: unknown) => seen.push(e) });
      await sleep(100);
      subscription.unsubscribe();
    } finally {
      nodes.servers[0]!.resume();
      nodes.servers[1]!.resume();
      nodes.servers[2]!.resume();
    }
    // the thawed nodes grant it (nodes 0..2 ran the grant queued for them: a quorum); the locker
    // gives it back, well before its 30 s TTL
    await sleep(1_500);
    expect(await holders(`lock:${key}`)).toEqual([null, null, null, null, null]);
    expect(seen).toEqual([]);
    // and the key is free at once for another locker
    const other = createLocker({ store: nodes.store(), ttl: 5_000, waitTimeout: 1_000 });
    const lease = await firstValueFrom(other.acquire(key));
    await lease.release();
    await Promise.all([locker.close(), other.close()]);
  });

  it('closing the locker (and the store) while an attempt is out ends it, and nothing is left on any node', async () => {
    const store = nodes.store({ nodeTimeout: 800 });
    const locker = createLocker({ store, ttl: 30_000, commandTimeout: 5_000 });
    await nodes.connected();
    const key = fresh('close');
    nodes.servers[3]!.pause();
    nodes.servers[4]!.pause();
    nodes.servers[2]!.pause();
    let outcome: Promise<unknown>;
    try {
      outcome = firstValueFrom(locker.acquire(key)).then(
        (lease) => lease,
        (e: unknown) => e,
      );
      await sleep(100);
      store.close();
      await locker.close();
    } finally {
      nodes.servers[2]!.resume();
      nodes.servers[3]!.resume();
      nodes.servers[4]!.resume();
    }
    const ended = await outcome;
    expect(ended).toBeInstanceOf(Error);
    await sleep(1_500);
    expect(await holders(`lock:${key}`)).toEqual([null, null, null, null, null]);
  });
});

describe('RedlockStore under faults: renewal on a minority', () => {
  it('a lease whose renewals reach 2 of 5 nodes (3 frozen) is lost by its deadline, never reported renewed; the late renewals on the thawed nodes bring nothing back', async () => {
    const ttl = 900;
    const locker = createLocker({ store: nodes.store({ nodeTimeout: 100 }), ttl });
    await nodes.connected();
    const key = fresh('minority-renew');
    const events: Array<LockEvent & { seenAt: number }> = [];
    locker.events$.subscribe((e) => events.push({ ...e, seenAt: performance.now() }));
    const outcome = lastValueFrom(locker.using(key, (lease) => timer(30_000).pipe(map(() => lease)))).catch((e: unknown) => e);
    await eventually(() => events.some((e) => e.type === 'renewed'), 5_000);
    nodes.servers[0]!.pause();
    nodes.servers[1]!.pause();
    nodes.servers[2]!.pause();
    const frozenAt = performance.now();
    let lostAt = 0;
    let renewedAfter = 0;
    try {
      const error = await outcome;
      lostAt = performance.now();
      expect(isLockLostError(error)).toBe(true);
      expect((error as LockLostError).reason).toBe('store-unreachable');
      // the last renewal answered before the freeze: its deadline is at most ttl after it was sent
      expect(lostAt - frozenAt).toBeLessThan(ttl + 1_000);
      // a renewal counts only when it was answered by a quorum: none after the freeze
      renewedAfter = events.filter((e) => e.type === 'renewed' && e.seenAt > frozenAt + 150).length;
    } finally {
      // thaw well within the keys' TTL: the frozen nodes still hold the key, and run the renewals
      // queued for them, then the locker's release
      nodes.servers[0]!.resume();
      nodes.servers[1]!.resume();
      nodes.servers[2]!.resume();
    }
    expect(renewedAfter).toBe(0);
    await eventually(async () => (await holders(`lock:${key}`)).every((holder) => holder === null), 5_000);
    await locker.close();
  });
});

describe('RedlockStore under faults: a restart without persistence', () => {
  it('ignoring the delayed restart gives two holders (as docs/redlock.md warns); restarting after the TTL does not', async () => {
    const store = nodes.store({ nodeTimeout: 300 });
    await nodes.connected();
    const key = fresh('restart');
    try {
      // A holds the key on nodes 0..2 only (as after its grants on 3 and 4 failed)
      await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'A', 'PX', 5_000)));
      // node 2 crashes and comes back at once, empty: B wins on 2, 3 and 4 while A holds 0 and 1
      await nodes.kill(2);
      await nodes.restart(2);
      expect(await store.tryAcquire(key, 'B', 5_000)).toMatchObject({ acquired: true });
      expect(await holders(key)).toEqual(['A', 'A', 'B', 'B', 'B']);
      await nodes.flush();
      // delayed restart: C holds 0..2; node 2 crashes and stays down for C's TTL. While it is
      // down D cannot win (C still holds 0 and 1); once it is back, C's keys are gone everywhere
      await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'C', 'PX', 1_500)));
      await nodes.kill(2);
      expect(await store.tryAcquire(key, 'D', 5_000)).toMatchObject({ acquired: false });
      await sleep(1_600);
      await nodes.restart(2);
      expect(await store.tryAcquire(key, 'D', 5_000)).toMatchObject({ acquired: true });
      // The grant is answered once a quorum took it (no raise round since the fence floor): the
      // calls to the other nodes (the restarted one's client may still be reconnecting) land after.
      await eventually(async () => (await holders(key)).every((holder) => holder === 'D'), 2_000);
      expect(await holders(key)).toEqual(['D', 'D', 'D', 'D', 'D']);
    } finally {
      await nodes.restart(0, 1, 2, 3, 4);
    }
  });
});
