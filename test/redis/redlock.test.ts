/**
 * The quorum store (RedlockStore) over 5 private Redis servers that the tests kill, restart (empty:
 * no persistence), pause and resume: exclusion across processes, a minority of nodes down, a
 * majority down (the quorum error, not a wait), a frozen node, the validity of a lock won after a
 * long wait, quorum fences across node subsets and data loss, and its options.
 */
import { fileURLToPath } from 'node:url';
import { firstValueFrom, lastValueFrom, map, of, timer } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockLostError,
  isLockStoreError,
  isLockTimeoutError,
  isQuorumUnreachableError,
  LockOptionsError,
  QuorumUnreachableError,
  type LockEvent,
  type Locker,
  type LockLostError,
} from '../../src/index.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { defineCommands, runScript } from '../../src/backends/redis/protocol/commands.js';
import { FencedResource, RedlockStore, type RedlockStoreOptions } from '../../src/redis.js';
import { findOverlaps, type CriticalSection } from '../../src/testing.js';
import type { ContenderReport, ContenderSettings } from '../fixtures/contender.js';
import { exitOf, forkFixture, killIfRunning, within } from '../support/children.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { connect } from '../support/redis.js';
import { eventually } from '../support/timing.js';
import { seedOf } from '../support/fenceBlocks.js';

const nodes = quorumNodes(5);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `redlock:${what}:${++n}`;

/** A locker on a new RedlockStore over the 5 nodes. */
function lockerOn(options: Parameters<typeof createLocker>[0] = {}, storeOptions?: RedlockStoreOptions): { locker: Locker; store: RedlockStore } {
  const store = nodes.store(storeOptions);
  return { locker: createLocker({ store, ...options }), store };
}

const names = (indexes: number[]) => indexes.map((i) => `${nodes.servers[i]!.host}:${nodes.servers[i]!.port}`);

describe('RedlockStore: exclusion', () => {
  const contender = fileURLToPath(new URL('../fixtures/contender.ts', import.meta.url));

  it('3 processes × 2 loops × 15 acquisitions of one key over 5 nodes: 0 overlaps', async () => {
    const settings: ContenderSettings = {
      port: 0,
      ports: nodes.servers.map((s) => s.port),
      key: fresh('exclusive'),
      loops: 2,
      iterations: 15,
      holdMs: 1,
      ttl: 10_000,
    };
    const children = Array.from({ length: 3 }, () => forkFixture(contender, 'CONTENDER', settings));
    try {
      const ready = children.map((child) => new Promise<void>((resolve) => child.once('message', () => resolve())));
      await within(Promise.all(ready), 20_000, 'contenders ready');
      const reports = children.map((child) => new Promise<ContenderReport>((resolve) => child.once('message', (m) => resolve(m as ContenderReport))));
      children.forEach((child) => child.send('go'));
      const all = await within(Promise.all(reports), 50_000, 'contender reports');
      const sections: CriticalSection[] = all.flatMap((report, owner) =>
        report.sections.map(([enter, exit]) => ({ enter: BigInt(enter), exit: BigInt(exit), owner: String(owner) })),
      );
      expect(all.flatMap((r) => r.errors)).toEqual([]);
      expect(all.reduce((sum, r) => sum + r.timeouts, 0)).toBe(0);
      expect(sections).toHaveLength(3 * 2 * 15);
      expect(new Set(sections.map((s) => s.owner)).size).toBe(3);
      expect(findOverlaps(sections)).toEqual([]);
      await Promise.all(children.map((child) => exitOf(child, 5_000)));
    } finally {
      children.forEach(killIfRunning);
    }
  });

  it('a key held on a quorum is refused to every other token, even when some nodes are free', async () => {
    const store = nodes.store();
    const key = fresh('minority');
    // another owner holds the key on 3 nodes (as after a crash between its grants): nobody can win
    await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'other', 'PX', 10_000)));
    expect(await store.tryAcquire(key, 'mine', 10_000)).toMatchObject({ acquired: false });
    // the refused attempt gave back the 2 nodes it had won
    expect(await Promise.all(nodes.admins.map((admin) => admin.get(key)))).toEqual(['other', 'other', 'other', null, null]);
    // held on 2 only: a quorum (3) is free, so a newcomer wins
    await nodes.admins[2]!.del(key);
    expect(await store.tryAcquire(key, 'mine', 10_000)).toMatchObject({ acquired: true });
  });
});

describe('RedlockStore: nodes down', () => {
  it('works with 1 and with 2 nodes killed, fails with the quorum error with 3 (naming them, within the wait limit), and works again after a restart', async () => {
    const { locker } = lockerOn({ waitTimeout: 20_000 });
    await nodes.connected();
    const key = fresh('down');
    const work = () => lastValueFrom(locker.using(key, (lease) => of(lease.fence)));
    try {
      const fences = [await work()];
      await nodes.kill(0);
      fences.push(await work());
      await nodes.kill(1);
      fences.push(await work());
      await nodes.kill(2);
      const started = performance.now();
      const error = await work().then(
        () => undefined,
        (e: unknown) => e,
      );
      const waited = performance.now() - started;
      // a store error whose cause names every dead node, long before the wait limit (20 s)
      expect(isLockStoreError(error)).toBe(true);
      const cause = (error as { cause?: unknown }).cause;
      expect(cause).toBeInstanceOf(QuorumUnreachableError);
      expect(isQuorumUnreachableError(cause)).toBe(true);
      const unreachable = cause as QuorumUnreachableError;
      expect(unreachable.nodes.map((node) => node.node).sort()).toEqual(names([0, 1, 2]).sort());
      expect(unreachable).toMatchObject({ answered: 2, needed: 3 });
      expect((error as Error).message).toMatch(/quorum unreachable/);
      for (const name of names([0, 1, 2])) expect(unreachable.message).toContain(name);
      expect(waited).toBeLessThan(10_000);
      await nodes.restart(0, 1, 2);
      fences.push(await work());
      expect(fences.every((f, i) => i === 0 || f > fences[i - 1]!)).toBe(true);
    } finally {
      await nodes.restart(0, 1, 2);
      await locker.close();
    }
  });

  it('busy is not down: a key held elsewhere with 2 nodes dead times out (LockTimeoutError); with 3 dead it is the quorum error', async () => {
    const holder = lockerOn().locker;
    const waiter = lockerOn({ waitTimeout: 600, retry: { minDelay: 20, jitter: 20 } }).locker;
    await nodes.connected();
    const key = fresh('busy');
    try {
      const lease = await firstValueFrom(holder.acquire(key, { renew: false, ttl: 30_000 }));
      await nodes.kill(0, 1);
      const busy = await firstValueFrom(waiter.acquire(key)).catch((e: unknown) => e);
      expect(isLockTimeoutError(busy)).toBe(true);
      await nodes.kill(2);
      const down = await firstValueFrom(waiter.acquire(key)).catch((e: unknown) => e);
      expect(isLockStoreError(down)).toBe(true);
      expect(isQuorumUnreachableError((down as Error).cause)).toBe(true);
      await nodes.restart(0, 1, 2);
      await lease.release();
    } finally {
      await nodes.restart(0, 1, 2);
      await Promise.all([holder.close(), waiter.close()]);
    }
  });

  it('names why each node failed: no answer in time, with the connection state and its last error', async () => {
    const store = nodes.store({ nodeTimeout: 200 });
    const key = fresh('why');
    try {
      await nodes.kill(0, 1, 2);
      const error = await store.tryAcquire(key, 'mine', 10_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuorumUnreachableError);
      const message = (error as Error).message;
      expect(message).toMatch(/quorum unreachable/);
      expect(message).toMatch(/2 of 5 nodes answered, 3 needed/);
      for (const name of names([0, 1, 2]))
        expect(message).toMatch(new RegExp(`${name} (gave no answer within 200 ms|failed: .*)\\(connection \\w+: connect ECONNREFUSED`));
      // release and extend never hang; release never rejects
      expect(await store.release(key, 'mine')).toBe(false);
      await expect(store.extend(key, 'mine', 1000)).rejects.toBeInstanceOf(QuorumUnreachableError);
    } finally {
      await nodes.restart(0, 1, 2);
    }
  });

  it('with one node frozen (SIGSTOP), every acquisition completes within a bound set by the node timeout', async () => {
    // commandTimeout far above the bound: without the per-node timeout an attempt would wait for it
    const { locker } = lockerOn({ commandTimeout: 10_000 }, { nodeTimeout: 100 });
    await nodes.connected();
    const key = fresh('frozen');
    const busyKey = fresh('frozen-busy');
    await lastValueFrom(of(1).pipe(locker.withLock(key))); // scripts loaded on every node
    const store = nodes.store({ nodeTimeout: 100 });
    await nodes.connected();
    expect(await store.tryAcquire(busyKey, 'holder', 30_000)).toMatchObject({ acquired: true });
    nodes.servers[0]!.pause();
    try {
      for (let i = 0; i < 8; i++) {
        const started = performance.now();
        const lease = await firstValueFrom(locker.acquire(key));
        // each attempt: a grant round and a fence round, each decided without the frozen node
        expect(performance.now() - started).toBeLessThan(1_500);
        expect(await lease.release()).toBe(true);
      }
      for (let i = 0; i < 4; i++) {
        // refused: the attempt gives the key back on the frozen node too (it may have granted it),
        // and waits for that no longer than the node timeout
        const started = performance.now();
        expect(await within(store.tryAcquire(busyKey, `other${i}`, 30_000), 5_000, 'a refused attempt')).toMatchObject({ acquired: false });
        expect(performance.now() - started).toBeLessThan(1_500);
      }
    } finally {
      nodes.servers[0]!.resume();
      await locker.close();
    }
    // once thawed, the frozen node ran the grants and the releases queued for it, in order: nothing is left
    await eventually(async () => (await nodes.admins[0]!.get(`lock:${key}`)) === null && (await nodes.admins[0]!.get(busyKey)) === 'holder');
    expect(await store.release(busyKey, 'holder')).toBe(true);
  });
});

describe('RedlockStore: renewal', () => {
  it('renews a lease through a quorum (2 nodes dead), and loses it by its deadline once no quorum is left', async () => {
    const { locker } = lockerOn({ ttl: 600 }, { nodeTimeout: 100 });
    await nodes.connected();
    const key = fresh('renew');
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    try {
      await nodes.kill(3, 4);
      let acquiredAt = 0;
      const outcome = lastValueFrom(
        locker.using(key, (lease) => {
          acquiredAt = performance.now();
          return timer(60_000).pipe(map(() => lease));
        }),
      ).catch((e: unknown) => e);
      await eventually(() => events.filter((e) => e.type === 'renewed').length >= 3, 10_000);
      expect(events.some((e) => e.type === 'lost')).toBe(false);
      await nodes.kill(2);
      const killedAt = performance.now();
      const error = await within(outcome, 10_000, 'the loss');
      expect(isLockLostError(error)).toBe(true);
      expect((error as LockLostError).reason).toBe('store-unreachable');
      // by the lease's deadline (600 ms after the last renewal was sent), not later
      expect(performance.now() - killedAt).toBeLessThan(600 + 1_000);
      expect(acquiredAt).toBeGreaterThan(0);
    } finally {
      await nodes.restart(2, 3, 4);
      await locker.close();
    }
  });
});

describe('RedlockStore: validity', () => {
  it('a lock won after a long wait has its full validity (ttl − drift), not what is left after the wait', async () => {
    const holder = lockerOn().locker;
    const waiter = lockerOn({ waitTimeout: 10_000, retry: { minDelay: 20, jitter: 20 } }).locker;
    await nodes.connected();
    const key = fresh('validity');
    try {
      const held = await firstValueFrom(holder.acquire(key, { ttl: 10_000 }));
      const waitStarted = performance.now();
      const waiting = firstValueFrom(waiter.acquire(key, { ttl: 3_000, renew: false }));
      await lastValueFrom(timer(1_500));
      await held.release();
      const lease = await waiting;
      const now = performance.now();
      expect(now - waitStarted).toBeGreaterThan(1_400);
      // ttl − drift (3000 − 32), less only the last attempt's own time, never the wait
      expect(lease.validUntil - now).toBeLessThanOrEqual(3_000 - 32);
      expect(lease.validUntil - now).toBeGreaterThan(3_000 - 32 - 400);
      await lease.release();
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });

  it("answers the validity it measured: ttl − this attempt's time − drift (driftFactor, drift)", async () => {
    const store = nodes.store({ driftFactor: 0.1, drift: 50 });
    const started = performance.now();
    const result = await store.tryAcquire(fresh('measured'), 't', 2_000);
    const took = performance.now() - started;
    if (!result.acquired) throw new Error('refused');
    expect(result.validity).toBeLessThanOrEqual(2_000 - 250);
    expect(result.validity).toBeGreaterThanOrEqual(2_000 - 250 - took);
    expect(result.ttl).toBeUndefined();
  });

  it('counts a node that already holds our token as won, with what is left of its TTL: the validity is the quorum-th longest', async () => {
    const store = nodes.store();
    const key = fresh('own-token');
    // an earlier attempt of ours left the key on nodes 0..2 (its release did not reach them)
    await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'mine', 'PX', 2_000)));
    const result = await store.tryAcquire(key, 'mine', 10_000);
    if (!result.acquired) throw new Error('refused');
    // nodes 3 and 4 hold it for 10 s, nodes 0..2 for what is left of 2 s: a quorum holds it ≤ 2 s
    expect(result.ttl).toBeLessThanOrEqual(2_000);
    expect(result.validity).toBeLessThan(2_000 - 100);
    expect(await store.release(key, 'mine')).toBe(true);
  });

  it('refuses a grant whose validity is gone by the time a quorum answered (and gives it back everywhere)', async () => {
    // a drift allowance larger than the TTL: no grant can have any validity left
    const store = nodes.store({ drift: 50 });
    const key = fresh('no-validity');
    expect(await store.tryAcquire(key, 't', 40)).toMatchObject({ acquired: false });
    expect(await Promise.all(nodes.admins.map((admin) => admin.get(key)))).toEqual([null, null, null, null, null]);
  });
});

describe('RedlockStore: fences', () => {
  it('fences strictly increase across grants on different node subsets, across a node restarted empty, and a FencedResource refuses the stale holder', async () => {
    const { locker } = lockerOn({ waitTimeout: 5_000 });
    await nodes.connected();
    const key = fresh('fences');
    // Node 0's fences stand 20 s ahead of the others' (as if its clock did): its fence counter is
    // set there. Nodes 3 and 4 are down, so the first grant's quorum is nodes 0, 1 and 2.
    const ahead = (await seedOf(nodes.admins[0]!)) + 20_000 * 4_000;
    await nodes.admins[0]!.set(helperKey(`lock:${key}`, 'fence'), String(ahead), 'PX', 60_000);
    try {
      await nodes.kill(3, 4);
      const first = await firstValueFrom(locker.acquire(key, { renew: false }));
      expect(first.fence).toBeGreaterThan(ahead);
      await first.release();
      // node 0 restarts without its data; the next quorum is again 0, 1 and 2: without the raise
      // of the first grant's fence on nodes 1 and 2, its fences would come from the clocks, 20 s
      // behind the first grant's
      await nodes.kill(0);
      await nodes.restart(0);
      const second = await firstValueFrom(locker.acquire(key, { renew: false }));
      expect(second.fence).toBeGreaterThan(first.fence);
      await second.release();
      // yet another subset: nodes 0, 3 (restarted empty) and 4; node 0 took the second raise
      await nodes.restart(3, 4);
      await nodes.kill(1, 2);
      const third = await firstValueFrom(locker.acquire(key, { renew: false }));
      expect(third.fence).toBeGreaterThan(second.fence);
      // the new holder writes; the stale one (the second, paused past its lease, say) is refused
      const resource = new FencedResource(nodes.admins[3]!, `${key}:resource`);
      expect(await resource.write(third.fence, 'new')).toMatchObject({ accepted: true });
      expect(await resource.write(second.fence, 'stale')).toMatchObject({ accepted: false, highestFence: third.fence });
      expect(await resource.read()).toEqual({ fence: third.fence, value: 'new' });
      await third.release();
    } finally {
      await nodes.restart(0, 1, 2, 3, 4);
      await locker.close();
    }
  });

  it("a fence more than 60 s ahead of a node's clock is refused by that node, not capped: when no quorum took it, no grant", async () => {
    const store = nodes.store();
    const key = fresh('far-ahead');
    // every node's fences stand 90 s ahead of its clock (its counter says so): whichever quorum
    // answers first, the grant's fence is that far ahead of every node's clock
    const far = (await seedOf(nodes.admins[0]!)) + 90_000 * 4_000;
    await Promise.all(nodes.admins.map((admin) => admin.set(helperKey(key, 'fence'), String(far), 'PX', 60_000)));
    const error = await store.tryAcquire(key, 't', 10_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumUnreachableError);
    expect((error as Error).message).toMatch(/more than 60 s ahead of this node's clock/);
    expect(await Promise.all(nodes.admins.map((admin) => admin.get(key)))).toEqual([null, null, null, null, null]);
    // the script itself: a fence within 60 s is recorded until the clock passes it
    defineCommands(nodes.admins[1]!);
    const other = helperKey(fresh('near'), 'fence');
    const near = (await seedOf(nodes.admins[1]!)) + 1_000 * 4_000;
    expect(await runScript(nodes.admins[1]!, 'raiseFence', [other], [String(near)])).toBe(1);
    expect(Number(await nodes.admins[1]!.get(other))).toBe(near);
    expect(await nodes.admins[1]!.pttl(other)).toBeGreaterThan(900);
  });
});

describe('RedlockStore: options', () => {
  it('refuses bad clients and options with LockOptionsError naming them', () => {
    const [a, b, c] = nodes.clients();
    const bad: Array<[() => unknown, RegExp]> = [
      [() => new RedlockStore([]), /Invalid clients/],
      [() => new RedlockStore('x' as never), /Invalid clients/],
      [() => new RedlockStore([a!, {} as never]), /Invalid clients\[1\]/],
      [() => new RedlockStore([a!, b!, a!]), /Invalid clients\[2\].*the same client twice/],
      [() => new RedlockStore([a!, b!, connect(nodes.servers[1]!, { db: 3, lazyConnect: true })]), /Invalid clients\[2\].*clients\[1\]/],
      [() => new RedlockStore([a!, { isCluster: true, defineCommand() {}, multi() {}, pipeline() {} } as never]), /Invalid clients\[1\].*not a Cluster/],
      [() => new RedlockStore([a!, b!, c!], { nodeTimeout: 0 }), /Invalid nodeTimeout: expected an integer from 1/],
      [() => new RedlockStore([a!, b!, c!], { nodeTimeout: 1.5 }), /Invalid nodeTimeout/],
      [() => new RedlockStore([a!, b!, c!], { driftFactor: 1 }), /Invalid driftFactor: expected a number from 0 to less than 1/],
      [() => new RedlockStore([a!, b!, c!], { driftFactor: -0.1 }), /Invalid driftFactor/],
      [() => new RedlockStore([a!, b!, c!], { drift: -1 }), /Invalid drift: expected a number from 0/],
      [() => new RedlockStore([a!, b!, c!], { drift: Number.NaN }), /Invalid drift/],
      [() => new RedlockStore([a!, b!, c!], { retries: 3 } as never), /Invalid options.retries/],
      [() => new RedlockStore([a!, b!, c!], 5 as never), /Invalid options/],
    ];
    for (const [make, message] of bad) {
      expect(make).toThrow(LockOptionsError);
      expect(make).toThrow(message);
    }
  });

  it("refuses keys in the store's own namespace, and bad TTLs, before anything is sent", async () => {
    const store = nodes.store();
    expect(() => store.checkKey('rxjs-lock:fence:{x}')).toThrow(LockOptionsError);
    await expect(store.tryAcquire('rxjs-lock:fence:{x}', 't', 1000)).rejects.toBeInstanceOf(LockOptionsError);
    await expect(store.tryAcquire(fresh('ttl'), 't', 0)).rejects.toBeInstanceOf(LockOptionsError);
    await expect(store.extend(fresh('ttl'), 't', 0)).rejects.toBeInstanceOf(LockOptionsError);
  });
});
