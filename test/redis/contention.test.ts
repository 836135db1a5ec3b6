/**
 * Contention on a real Redis: how a hot key is shared, not how fast.
 *
 * Two lockers on two connections (two RedisLockStores) stand for two processes; a forked child
 * stands in only where a real process death is needed. Checked here: the key goes round the
 * "processes" in turn (store grants alternate, shares are even) with cohort hand-offs in between,
 * and never to two holders at once, with fences that only grow; well under one round trip per
 * acquisition; a lost wake-up signal costs one capped back-off step; a waiter that died in line
 * blocks the key only until its place lapses; wake-up off still works (and never subscribes);
 * cancellations leave no gate, no lock and no line behind; the local gate spares the store.
 * CONTENTION_VERBOSE=1 prints the measured figures.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { defer, finalize, firstValueFrom, lastValueFrom, NEVER, timer, type Subscription } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, type Lease, type LockerOptions, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisClient, type RedisSubscriber } from '../../src/redis.js';
import type { RedisLockStoreOptions } from '../../src/backends/redis/RedisLockStore.js';
import { countingClient, type CountingClient } from '../../support/countingClient.js';
import type { LockEngine } from '../../src/engine/LockEngine.js';
import { COMMANDS } from '../../src/backends/redis/protocol/commands.js';
import { findOverlaps, monotonicNs, type CriticalSection } from '../../src/testing.js';
import type { LineWaiterSettings } from '../fixtures/lineWaiter.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockKeyCount } from '../support/lockKeys.js';

const lineWaiter = fileURLToPath(new URL('../fixtures/lineWaiter.ts', import.meta.url));

const suite = redisSuite({ unhandled: 'afterEach' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeEach(async () => {
  await suite.admin.config('RESETSTAT');
});

/** A new connection of this test (closed after it). */
function newClient(): Redis {
  const client = connect(suite.server);
  suite.closers.push(() => client.disconnect());
  return client;
}

/** A new store of this test (its own subscriber closed after it). */
function newStore(client: RedisClient, options: RedisLockStoreOptions = {}): RedisLockStore {
  const store = new RedisLockStore(client, options);
  suite.closers.push(() => store.close());
  return store;
}

/** Resolves true once `check` holds, polling every 5 ms, or false after `ms`. */
async function settles(check: () => Promise<boolean> | boolean, ms = 3000): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}

async function eventually(check: () => Promise<boolean> | boolean, ms = 3000): Promise<void> {
  if (!(await settles(check, ms))) throw new Error('condition not reached in time');
}

/** Calls of `command` the server ran since the last RESETSTAT (commands inside scripts included). */
async function calls(command: string): Promise<number> {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await suite.admin.info('commandstats'));
  return match ? Number(match[1]) : 0;
}

/** The Redis-side lines of waiters and their places. */
async function lineKeys(): Promise<string[]> {
  return (await suite.admin.keys('*')).filter((key) => key.startsWith('rxjs-lock:line:') || key.startsWith('rxjs-lock:places:'));
}

/** The line key of lock key `lockKey` (no hash tag). */
const lineOf = (lockKey: string) => `rxjs-lock:line:{${lockKey}}`;

/** One "process": its own connection, store and locker. */
interface Contender {
  readonly name: string;
  readonly locker: Locker;
  readonly engine: LockEngine;
  readonly store: RedisLockStore;
  readonly counting: CountingClient<Redis>;
}

function contender(name: string, lockerOptions: LockerOptions = {}, storeOptions: RedisLockStoreOptions = {}): Contender {
  const counting = countingClient(newClient());
  const store = newStore(counting.client, storeOptions);
  const locker = createLocker({ store, ...lockerOptions });
  return { name, locker, engine: locker as unknown as LockEngine, store, counting };
}

/** One acquisition as its locker's `acquired` event told it. */
interface Acquisition {
  readonly who: string;
  /** monotonicNs() in the event handler: acquisitions are totally ordered by it. */
  readonly at: bigint;
  readonly token: string;
  readonly fence: number;
}

interface HotRun {
  /** In the order they happened. */
  readonly acquisitions: Acquisition[];
  /** Whether each `released` event says the lock passed locally, by `token/fence`. */
  readonly passedBy: Map<string, boolean>;
  readonly sections: CriticalSection[];
  /** (enter, lease.fence) seen inside the work. */
  readonly fencesSeen: Array<{ at: bigint; fence: number }>;
  readonly events: LockEvent[];
}

/**
 * Every contender runs `loops` concurrent loops taking `key` through `using` (holding it `holdMs`)
 * until `ms` have passed; records acquisitions, releases, critical sections and the fences the
 * work saw.
 */
async function hotKey(contenders: Contender[], key: string, { loops, ms, holdMs }: { loops: number; ms: number; holdMs: number }): Promise<HotRun> {
  const run: HotRun = { acquisitions: [], passedBy: new Map(), sections: [], fencesSeen: [], events: [] };
  const listening: Subscription[] = contenders.map((c) =>
    c.locker.events$.subscribe((event) => {
      run.events.push(event);
      if (event.type === 'acquired') run.acquisitions.push({ who: c.name, at: monotonicNs(), token: event.token, fence: event.fence });
      else if (event.type === 'released') run.passedBy.set(`${event.token}/${event.fence}`, event.outcome === 'passed');
    }),
  );
  const stopAt = performance.now() + ms;
  const loop = async (c: Contender): Promise<void> => {
    while (performance.now() < stopAt) {
      await lastValueFrom(
        c.locker.using(key, (lease) => {
          const enter = monotonicNs();
          run.fencesSeen.push({ at: enter, fence: lease.fence });
          return timer(holdMs).pipe(finalize(() => run.sections.push({ enter, exit: monotonicNs(), owner: c.name })));
        }),
      );
    }
  };
  try {
    await Promise.all(contenders.flatMap((c) => Array.from({ length: loops }, () => loop(c))));
  } finally {
    for (const subscription of listening) subscription.unsubscribe();
  }
  return run;
}

/** The acquisitions that came from the store (not from a local cohort pass), in order. */
function storeGrants(run: HotRun): Acquisition[] {
  return run.acquisitions.filter((acquisition, i) => {
    const previous = run.acquisitions[i - 1];
    if (previous === undefined || previous.who !== acquisition.who) return true;
    // The next acquisition after a release that passed the lock on is that pass.
    return run.passedBy.get(`${previous.token}/${previous.fence}`) !== true;
  });
}

/** Share of consecutive store grants that went to the other locker, while both were taking turns. */
function switchRatio(grants: Acquisition[], names: string[]): { ratio: number; pairs: number } {
  const firsts = names.map((n) => grants.findIndex((g) => g.who === n));
  const lasts = names.map((n) => grants.map((g) => g.who).lastIndexOf(n));
  const window = grants.slice(Math.max(...firsts), Math.min(...lasts) + 1);
  let switches = 0;
  for (let i = 1; i < window.length; i++) if (window[i]!.who !== window[i - 1]!.who) switches++;
  return { ratio: window.length > 1 ? switches / (window.length - 1) : 0, pairs: window.length - 1 };
}

/** CONTENTION_VERBOSE=1 prints the measured figures. */
const report = (what: string, figures: Record<string, unknown>) => {
  if (process.env.CONTENTION_VERBOSE) console.log(what, JSON.stringify(figures));
};

const isSorted = (values: number[]) => values.every((v, i) => i === 0 || v > values[i - 1]!);
const byTime = <T extends { at: bigint }>(a: T, b: T) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0);

describe('a hot key shared by two processes', () => {
  it('goes round the processes in turn: even shares, alternating store grants, no overlap, growing fences, nothing left', async () => {
    const a = contender('A');
    const b = contender('B');
    const run = await hotKey([a, b], 'hot', { loops: 3, ms: 1500, holdMs: 1 });

    const total = run.acquisitions.length;
    const ofA = run.acquisitions.filter((x) => x.who === 'A').length;
    expect(total).toBeGreaterThan(100);
    expect(total).toBe(run.sections.length);
    expect(ofA / total).toBeGreaterThanOrEqual(0.35);
    expect((total - ofA) / total).toBeGreaterThanOrEqual(0.35);

    // Store grants: acquisitions that did not follow a cohort pass. Each pass is the same store
    // lease (token) as the acquisition before it; each store grant a new one.
    const grants = storeGrants(run);
    const passes = [...run.passedBy.values()].filter(Boolean).length;
    expect(grants.length + passes).toBe(total);
    const newTokens = run.acquisitions.filter((x, i) => i === 0 || x.token !== run.acquisitions[i - 1]!.token).length;
    expect(grants.length).toBe(newTokens);
    // The cohort hand-off is in use, and bounded: the store hands the key over regularly. (A turn
    // lasts at most cohort.batchMs (48 ms) plus a hold while its batch is served — holds stretch on
    // a loaded machine — and about 12 ms otherwise: 1.5 s gives well over 25 turns.)
    expect(passes).toBeGreaterThan(0);
    expect(grants.length).toBeGreaterThan(25);

    // The process that just gave the key back does not win it again and again.
    const { ratio, pairs } = switchRatio(grants, ['A', 'B']);
    report('fair hand-off', { total, ofA, grants: grants.length, passes, ratio, pairs });
    expect(pairs).toBeGreaterThan(25);
    expect(ratio).toBeGreaterThanOrEqual(0.8);

    expect(findOverlaps(run.sections)).toEqual([]);
    // Fences strictly increase in acquisition order, as events reported them and as the work saw them.
    expect(isSorted(run.acquisitions.map((x) => x.fence))).toBe(true);
    expect(isSorted([...run.fencesSeen].sort(byTime).map((x) => x.fence))).toBe(true);
    expect(run.fencesSeen.map((x) => x.fence).sort((x, y) => x - y)).toEqual(run.acquisitions.map((x) => x.fence));
    expect(run.events.filter((e) => !['acquired', 'released', 'renewed'].includes(e.type))).toEqual([]);

    expect(await settles(() => a.engine.liveKeys === 0 && b.engine.liveKeys === 0, 1000)).toBe(true);
    expect(a.engine.liveKeys).toBe(0);
    expect(b.engine.liveKeys).toBe(0);
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });

  it('costs well under one round trip per acquisition (cohort hand-off + direct grant)', async () => {
    const a = contender('A');
    const b = contender('B');
    const run = await hotKey([a, b], 'hot', { loops: 3, ms: 1500, holdMs: 1 });
    const roundTrips = a.counting.roundTrips + b.counting.roundTrips;
    const perAcquisition = roundTrips / run.acquisitions.length;
    report('round trips', { roundTrips, acquisitions: run.acquisitions.length, perAcquisition });
    expect(run.acquisitions.length).toBeGreaterThan(100);
    expect(perAcquisition).toBeLessThan(1);
    // The counting client saw every script the server ran.
    expect(roundTrips).toBe((await calls('evalsha')) + (await calls('eval')) + (await calls('exec')));
  });
});

/** A real subscriber connection whose first `drops` messages are lost on the way. */
function droppingSubscriber(drops: number): { subscriber: RedisSubscriber; dropped: string[] } {
  const connection = newClient().duplicate();
  connection.on('error', () => undefined);
  suite.closers.push(() => connection.disconnect());
  const dropped: string[] = [];
  let left = drops;
  const subscriber: RedisSubscriber = {
    subscribe: (...channels) => connection.subscribe(...channels),
    unsubscribe: (...channels) => connection.unsubscribe(...channels),
    on: ((event: string, listener: (...args: never[]) => void) => {
      if (event !== 'message') return connection.on(event, listener as (...args: unknown[]) => void);
      const deliver = listener as (channel: string, message: string) => void;
      return connection.on('message', (channel: string, message: string) => {
        if (left > 0) {
          left--;
          dropped.push(message);
          return;
        }
        deliver(channel, message);
      });
    }) as RedisSubscriber['on'],
    disconnect: () => connection.disconnect(),
  };
  return { subscriber, dropped };
}

/**
 * A holds `key` for at least 100 ms; B (placeTtl 600, the given subscriber) waits in line; A
 * releases. Returns when B got the lock relative to the moment A's release was answered.
 */
async function handOff(key: string, subscriber: RedisSubscriber): Promise<{ afterRelease: number; bLease: Lease }> {
  const a = contender('A');
  const b = contender('B', {}, { placeTtl: 600, subscriber });
  let bAcquiredAt = 0;
  b.locker.events$.subscribe((e) => {
    if (e.type === 'acquired') bAcquiredAt = performance.now();
  });
  const aLease = await firstValueFrom(a.locker.acquire(key));
  const heldSince = performance.now();
  const bLease = firstValueFrom(b.locker.acquire(key));
  await eventually(async () => (await suite.admin.zcard(lineOf(`lock:${key}`))) === 1);
  await sleep(Math.max(0, 100 - (performance.now() - heldSince)));
  expect(bAcquiredAt).toBe(0);
  expect(await aLease.release()).toBe(true);
  const releasedAt = performance.now();
  const lease = await bLease;
  expect(bAcquiredAt).toBeGreaterThan(0);
  expect(lease.fence).toBeGreaterThan(aLease.fence);
  expect(await lease.release()).toBe(true);
  expect(await lockKeyCount(suite.admin)).toBe(0);
  return { afterRelease: bAcquiredAt - releasedAt, bLease: lease };
}

describe('wake-up', () => {
  it('a missed wake-up signal is recovered by the capped back-off (within placeTtl/3 + 150 ms of the release)', async () => {
    const { subscriber, dropped } = droppingSubscriber(1);
    const { afterRelease, bLease } = await handOff('missed', subscriber);
    report('missed signal', { afterRelease });
    // The grant signal was the message lost…
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(new RegExp(`^granted ${bLease.token} ${bLease.fence} \\d+ \\d+ \\d+$`)); // token, fence, waiting still in line
    // …and B's next poll of its place found the key handed to it.
    expect(afterRelease).toBeLessThan(600 / 3 + 150);
  });

  it('with the signal delivered, the waiter gets the lock within a few ms of the release', async () => {
    const { subscriber, dropped } = droppingSubscriber(0);
    const { afterRelease } = await handOff('delivered', subscriber);
    report('delivered signal', { afterRelease });
    expect(dropped).toEqual([]);
    expect(afterRelease).toBeLessThan(30);
  });

  it('wake-up off still works: both processes make progress, no overlap, nothing left, and never a SUBSCRIBE', async () => {
    const a = contender('A', {}, { wakeUp: false });
    const b = contender('B', {}, { wakeUp: false });
    const run = await hotKey([a, b], 'cold', { loops: 2, ms: 1000, holdMs: 1 });
    expect(run.acquisitions.some((x) => x.who === 'A')).toBe(true);
    expect(run.acquisitions.some((x) => x.who === 'B')).toBe(true);
    // Both took the key from the store, not just once at the start.
    const grants = storeGrants(run);
    report('wake-up off', {
      total: run.acquisitions.length,
      grantsA: grants.filter((g) => g.who === 'A').length,
      grantsB: grants.filter((g) => g.who === 'B').length,
    });
    expect(grants.filter((g) => g.who === 'A').length).toBeGreaterThan(2);
    expect(grants.filter((g) => g.who === 'B').length).toBeGreaterThan(2);
    expect(findOverlaps(run.sections)).toEqual([]);
    expect(isSorted(run.acquisitions.map((x) => x.fence))).toBe(true);
    expect(await settles(() => a.engine.liveKeys === 0 && b.engine.liveKeys === 0, 1000)).toBe(true);
    expect(await lockKeyCount(suite.admin)).toBe(0);
    expect(await suite.admin.info('commandstats')).not.toMatch(/^cmdstat_(p|s)?subscribe:/m);
    expect(await calls('publish')).toBe(0);
    // The waiters did queue (and found their grants by polling).
    expect(await calls('zadd')).toBeGreaterThan(0);
  });
});

describe('a waiter that dies in line', () => {
  it('blocks the key only until its place lapses: the key goes to the ghost first, then to the next live waiter', async () => {
    const a = contender('A');
    const b = contender('B', {}, { placeTtl: 500 });
    const ghostStore = newStore(newClient(), { placeTtl: 500 });
    const aLease = await firstValueFrom(a.locker.acquire('hot2'));

    // The ghost takes its place in line, then never asks again.
    const ghostSent = performance.now();
    expect(await ghostStore.tryAcquireInLine('lock:hot2', 'ghost-token', 30_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true, placeTtl: 500 });
    const ghostAnswered = performance.now();
    await sleep(10);

    let bAcquiredAt = 0;
    b.locker.events$.subscribe((e) => {
      if (e.type === 'acquired') bAcquiredAt = performance.now();
    });
    const bLease = firstValueFrom(b.locker.acquire('hot2'));
    await eventually(async () => (await suite.admin.zcard(lineOf('lock:hot2'))) === 2, 300);
    expect((await suite.admin.zrange(lineOf('lock:hot2'), '0', '-1'))[0]).toBe('ghost-token');

    expect(await aLease.release()).toBe(true);
    // The release handed the key to the first in line: the ghost, which never takes it.
    expect(await suite.admin.get('lock:hot2')).toBe('ghost-token');
    expect(bAcquiredAt).toBe(0);
    const ghostGrant = await suite.admin.hget('rxjs-lock:places:{lock:hot2}', 'grant');
    const ghostFence = Number(ghostGrant!.split(' ')[1]);
    expect(ghostGrant!.split(' ')[0]).toBe('ghost-token');

    const lease = await bLease;
    report('ghost', { sinceGhostSent: bAcquiredAt - ghostSent, sinceGhostAnswered: bAcquiredAt - ghostAnswered });
    // B got it once the ghost's claim lapsed (its place's expiry, 500 ms after its last call)…
    expect(bAcquiredAt).toBeGreaterThanOrEqual(ghostSent + 500 - 25);
    // …and within one back-off step of it (a waiter's poll is capped by the holder's TTL).
    expect(bAcquiredAt).toBeLessThanOrEqual(ghostAnswered + 500 + 500 / 3 + 150);
    // The ghost's grant consumed a fence between A's and B's.
    expect(ghostFence).toBeGreaterThan(aLease.fence);
    expect(lease.fence).toBeGreaterThan(ghostFence);
    expect(await suite.admin.get('lock:hot2')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });

  it('a real process killed (SIGKILL) while queued blocks the key only until its place lapses', async () => {
    const a = contender('A');
    const b = contender('B', {}, { placeTtl: 500 });
    const aLease = await firstValueFrom(a.locker.acquire('hot3'));
    const child = fork(lineWaiter, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, LINE_WAITER: JSON.stringify({ port: suite.server.port, key: 'hot3', placeTtl: 500 } satisfies LineWaiterSettings) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const messages: unknown[] = [];
    child.on('message', (m) => messages.push(m));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await eventually(() => messages.includes('ready'), 15_000);
      child.send('go');
      await eventually(async () => (await suite.admin.zcard(lineOf('lock:hot3'))) === 1, 3000);
      const childToken = (await suite.admin.zrange(lineOf('lock:hot3'), '0', '-1'))[0];

      let bAcquiredAt = 0;
      b.locker.events$.subscribe((e) => {
        if (e.type === 'acquired') bAcquiredAt = performance.now();
      });
      const bLease = firstValueFrom(b.locker.acquire('hot3'));
      await eventually(async () => (await suite.admin.zcard(lineOf('lock:hot3'))) === 2, 300);

      child.kill('SIGKILL');
      await exited;
      expect(await aLease.release()).toBe(true);
      const releasedAt = performance.now();
      // Handed to the dead child, still first in line.
      expect(await suite.admin.get('lock:hot3')).toBe(childToken);

      const lease = await bLease;
      report('killed child', { afterRelease: bAcquiredAt - releasedAt });
      expect(messages).not.toContain('acquired');
      // The child's last call was before the kill: its claim lapses within 500 ms of the release;
      // B takes the key within one back-off step after that.
      expect(bAcquiredAt - releasedAt).toBeLessThan(500 + 500 / 3 + 150);
      expect(await lease.release()).toBe(true);
      expect(await lockKeyCount(suite.admin)).toBe(0);
    } finally {
      killIfRunning(child);
    }
  });
});

function killIfRunning(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

describe('the local map and the Redis lines are emptied', () => {
  /**
   * 500 subscriptions to `withLock` on 20 keys, each holding for 0–5 ms and unsubscribed after
   * 0–20 ms (before, while or after it holds), on one locker; then waits for the releases to settle.
   */
  async function churn(locker: Locker): Promise<unknown[]> {
    const errors: unknown[] = [];
    const ended: Promise<void>[] = [];
    for (let i = 0; i < 500; i++) {
      const subscription = timer(Math.random() * 5)
        .pipe(locker.withLock(`churn:${i % 20}`))
        .subscribe({ error: (e: unknown) => errors.push(e) });
      ended.push(
        new Promise((resolve) =>
          setTimeout(() => {
            subscription.unsubscribe();
            resolve();
          }, Math.random() * 20),
        ),
      );
    }
    await Promise.all(ended);
    return errors;
  }

  /**
   * Waits (up to 2 s) until no gate and no key but fence counters is left, and still so 100 ms
   * later (an abandoned acquire may still be in flight when the last gate goes); reports what is left.
   */
  async function leftBehind(engines: LockEngine[]): Promise<{ liveKeys: number; lockKeys: number; lines: string[] }> {
    const started = performance.now();
    const clean = async () => engines.every((e) => e.liveKeys === 0) && (await lockKeyCount(suite.admin)) === 0;
    await settles(async () => (await clean()) && (await sleep(100), await clean()), 2000);
    const left = { liveKeys: engines.reduce((n, e) => n + e.liveKeys, 0), lockKeys: await lockKeyCount(suite.admin), lines: await lineKeys() };
    report('churn', { settledInMs: performance.now() - started, ...left });
    return left;
  }

  const count = (events: LockEvent[], type: LockEvent['type']) => events.filter((e) => e.type === type).length;

  it('after 500 subscriptions on 20 keys cancelled at random moments', async () => {
    const { locker, engine } = contender('A');
    // A live connection, so that the churn reaches every state rather than waiting for it.
    await lastValueFrom(timer(0).pipe(locker.withLock('warm-up')));
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    // Again (up to 5 rounds) while no subscription got as far as holding: on a loaded machine a
    // process that does not run for some 20 ms as the churn starts finds every unsubscription due
    // before any grant is read.
    for (let round = 0; round < 5 && (round === 0 || count(events, 'acquired') === 0); round++) {
      expect(await churn(locker)).toEqual([]);
      expect(await leftBehind([engine])).toEqual({ liveKeys: 0, lockKeys: 0, lines: [] });
    }
    report('churn events', {
      acquired: count(events, 'acquired'),
      passed: events.filter((e) => e.type === 'released' && e.outcome === 'passed').length,
      abandoned: count(events, 'abandoned-released'),
    });
    // The churn did reach the holding state.
    expect(count(events, 'acquired')).toBeGreaterThan(0);
  });

  it('likewise while another process holds the keys, so that cancelled waiters leave the Redis line', async () => {
    // Short places: a place left behind by a cancelled waiter (see the known bug below) lapses
    // within the settling time instead of 3 s, so this storm checks what it means to.
    const a = contender('A', {}, { placeTtl: 500 });
    const b = contender('B', {}, { placeTtl: 500 });
    // Live connections, and A's wake-up channel connection open (it lingers 2 s): A queues at once.
    const warm = lastValueFrom(timer(30).pipe(b.locker.withLock('warm-up')));
    await eventually(async () => (await lockKeyCount(suite.admin)) === 1);
    await lastValueFrom(timer(0).pipe(a.locker.withLock('warm-up')));
    await warm;
    await suite.admin.config('RESETSTAT');
    const events: LockEvent[] = [];
    a.locker.events$.subscribe((e) => events.push(e));
    // B takes every key first and holds it until 5–25 ms into the churn, then twice more for 5–25 ms.
    let bAcquired = 0;
    b.locker.events$.subscribe((e) => void (e.type === 'acquired' && bAcquired++));
    let startChurn = () => {};
    const churnStarted = new Promise<void>((resolve) => (startChurn = resolve));
    const holds = Array.from({ length: 20 }, async (_, k) => {
      for (let round = 0; round < 3; round++) {
        const work = defer(async () => {
          if (round === 0) await churnStarted;
          await sleep(5 + Math.random() * 20);
        });
        await lastValueFrom(work.pipe(b.locker.withLock(`churn:${k}`)));
      }
    });
    await eventually(() => bAcquired === 20, 2000);
    startChurn();
    expect(await churn(a.locker)).toEqual([]);
    await Promise.all(holds);
    expect(await leftBehind([a.engine, b.engine])).toEqual({ liveKeys: 0, lockKeys: 0, lines: [] });
    report('churn behind B', {
      acquired: count(events, 'acquired'),
      abandoned: count(events, 'abandoned-released'),
      zadd: await calls('zadd'),
      zrem: await calls('zrem'),
    });
    // A's waiters did queue in Redis behind B (and left the line when cancelled).
    expect(await calls('zadd')).toBeGreaterThan(0);
  });

  it('a waiter that stops waiting (unsubscribed, or timed out) leaves the Redis line at once', async () => {
    const a = contender('A');
    const b = contender('B');
    const held = await firstValueFrom(a.locker.acquire('left'));
    const subscription = NEVER.pipe(b.locker.withLock('left')).subscribe();
    await eventually(async () => (await suite.admin.zcard(lineOf('lock:left'))) === 1);
    await sleep(20);
    subscription.unsubscribe();
    expect(await settles(async () => (await lineKeys()).length === 0, 200)).toBe(true);

    const error = await firstValueFrom(b.locker.acquire('left', { waitTimeout: 300 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(await calls('zadd')).toBeGreaterThanOrEqual(2); // both took a place
    expect(await settles(async () => (await lineKeys()).length === 0, 200)).toBe(true);

    // Nobody waits: the release frees the key.
    expect(await held.release()).toBe(true);
    expect(await suite.admin.get('lock:left')).toBeNull();
    expect(await lockKeyCount(suite.admin)).toBe(0);
    expect(await settles(() => a.engine.liveKeys === 0 && b.engine.liveKeys === 0, 500)).toBe(true);
  });

  // Regression: when the last waiter left while the session's first queued attempt was in flight,
  // no `leave` was sent (no queued answer yet) and the late "queued" answer was ignored, so the
  // departed token kept its place in the Redis line and the next release handed the key to nobody
  // (blocked until that place lapsed, 3 s by default).
  it('a waiter cancelled while its first queued attempt is in flight leaves the Redis line at once', async () => {
    const a = contender('A');
    const raw = newClient();
    let cancel: (() => void) | undefined;
    // A real connection; the cancellation is triggered right after a queueing acquire is sent
    // (the acquire script with a caller in line: 4 keys and 6 arguments).
    const client = new Proxy(raw, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (property !== COMMANDS.acquire) return method.bind(target);
        return (...args: unknown[]) => {
          const reply = method.apply(target, args);
          // (the store calls its scripts as the commands registered for them: 4 keys, then token,
          // ttl, fences, placeTtl, place, inbox)
          const queueing = args.length === 10 && args[8] === 'keep';
          if (queueing && cancel !== undefined) queueMicrotask(cancel);
          if (queueing) cancel = undefined;
          return reply;
        };
      },
    }) as RedisClient;
    const b = createLocker({ store: newStore(client) });
    const held = await firstValueFrom(a.locker.acquire('departed'));
    const subscription = NEVER.pipe(b.withLock('departed')).subscribe();
    cancel = () => subscription.unsubscribe();
    await eventually(() => cancel === undefined);
    await sleep(100);
    expect(await held.release()).toBe(true);
    // Nobody waits: the release frees the key instead of handing it to the departed waiter.
    expect(await suite.admin.get('lock:departed')).toBeNull();
    expect(await lineKeys()).toEqual([]);
  });
});

describe('the local gate spares the store', () => {
  /** 8 loops on one key with 1 ms holds until 300 acquisitions: script calls per acquisition. */
  async function evalshaPerAcquisition(options: LockerOptions): Promise<number> {
    const { locker, engine } = contender('A', options);
    await suite.admin.config('RESETSTAT');
    let started = 0;
    let acquired = 0;
    const sections: CriticalSection[] = [];
    const loop = async () => {
      while (started < 300) {
        started++;
        await lastValueFrom(
          locker.using('spared', () => {
            acquired++;
            const enter = monotonicNs();
            return timer(1).pipe(finalize(() => sections.push({ enter, exit: monotonicNs() })));
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: 8 }, loop));
    expect(acquired).toBe(300);
    expect(findOverlaps(sections)).toEqual([]);
    expect(await settles(() => engine.liveKeys === 0, 1000)).toBe(true);
    expect(await lockKeyCount(suite.admin)).toBe(0);
    // ioredis sends a script's source (EVAL) the first time on a connection, then its SHA
    return ((await calls('evalsha')) + (await calls('eval'))) / acquired;
  }

  it('one locker, 8 loops on one key: far fewer store calls with the gate than without', async () => {
    const gated = await evalshaPerAcquisition({});
    const ungated = await evalshaPerAcquisition({ localGate: false });
    report('local gate', { gated, ungated });
    expect(gated).toBeLessThan(1);
    expect(gated).toBeLessThan(0.5 * ungated);
  });
});
