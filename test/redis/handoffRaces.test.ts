/**
 * Issue #10 ("Hand-off races") on a real Redis: what a release that hands the key to a waiter
 * promises when that waiter is dead, is leaving, or sleeps longer than its place lasts.
 *
 * 1. A key handed to a waiter that never claims it (its process was SIGKILLed) is free within
 *    min(place TTL, that waiter's ttl) of the hand-off (and one test holds that to the others: the
 *    waiter next in line takes it by then); once a live grantee claims it, the key carries the
 *    grantee's own ttl. (The Stream consumer group scenario is in handoffStreamConsumers.test.ts.)
 * 2. A waiter whose last attempt (or plain `leave`) meets the holder's release takes the lock
 *    instead of timing out and handing it back; if that call is lost, point 1 bounds the stall.
 * 3. A waiter whose retry delay is longer than its place TTL keeps its place (and its turn).
 *
 * Lockers on separate connections stand for processes; a forked child where a real process death
 * is needed. Store calls are delayed or failed on their way to Redis by an InterceptStore (see
 * ../support/handoffHarness.ts). HANDOFF_VERBOSE=1 prints the measured figures.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EMPTY, firstValueFrom, timer } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { isLockStoreError, isLockTimeoutError, type Lease, type LockerOptions, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { HandoffWaiterSettings } from '../fixtures/handoffWaiter.js';
import { killIfRunning } from '../support/children.js';
import { InterceptStore, keysOf, lineOf, recordedLocker } from '../support/handoffHarness.js';
import { lockKeyCount } from '../support/lockKeys.js';
import { suiteStore } from '../support/suiteLocker.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const waiterFile = fileURLToPath(new URL('../fixtures/handoffWaiter.ts', import.meta.url));

/** Generous: the machine is shared with other suites. */
const MARGIN = 300;

const report = (what: string, figures: unknown) => {
  if (process.env.HANDOFF_VERBOSE) console.log(what, JSON.stringify(figures));
};

const suite = redisSuite({ unhandled: 'off' });
afterEach(() => {
  suite.server.resume(); // in case a test paused it and failed before resuming
});

const newStore = (options: RedisLockStoreOptions = {}): RedisLockStore => suiteStore(suite, options);

function intercepted(options: RedisLockStoreOptions = {}): InterceptStore {
  return new InterceptStore(newStore(options));
}

/** A locker whose events are recorded; closed after the test. */
const newLocker = (options: LockerOptions) => recordedLocker(options, suite.closers);

/** Polls GET until the key no longer holds `token`; resolves the time it changed. */
async function whenNotHeldBy(lockKey: string, token: string, ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  while ((await suite.admin.get(lockKey)) === token) {
    if (performance.now() > deadline) throw new Error(`${lockKey} still held by ${token} after ${ms} ms`);
    await sleep(2);
  }
  return performance.now();
}

/**
 * Starts measuring how long this process did not run (a loaded machine, a long GC): the sum of
 * the lateness of a 10 ms interval timer, counting only ticks over 20 ms late. The returned
 * function stops it and gives the sum (ms). The observers here (GET polls) and the live waiters
 * (lockers) run in this process: whatever they do is late by that much, whatever Redis did.
 */
function notRunFor(): () => number {
  const every = 10;
  let last = performance.now();
  let lost = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    const late = now - last - every;
    if (late > 20) lost += late;
    last = now;
  }, every);
  return () => {
    clearInterval(tick);
    return lost;
  };
}

/** Resolves the lease with the moment it was emitted. */
function timedAcquire(locker: Locker, key: string, options?: Parameters<Locker['acquire']>[1]): Promise<{ lease: Lease; at: number }> {
  return firstValueFrom(locker.acquire(key, options)).then((lease) => ({ lease, at: performance.now() }));
}

describe('1. a key handed to a waiter that died in line', () => {
  const cases = [
    // The case: a dead waiter with ttl 1000 kept the key for 2.4 s after the release.
    { name: 'ttl 1000 < place TTL 3000', ttl: 1000, placeTtl: 3000, releaseAfterKillMs: 0 },
    // The place, not the ttl, is the shorter: the grant ends when the dead waiter's place would have lapsed.
    { name: 'place TTL 1000 < ttl 5000, released 300 ms after the kill', ttl: 5000, placeTtl: 1000, releaseAfterKillMs: 300 },
    // A ttl shorter than the live waiters' poll step (a third of the place TTL).
    { name: 'ttl 300 < place TTL 3000 / 3', ttl: 300, placeTtl: 3000, releaseAfterKillMs: 0 },
    // The same, released just after the next waiter refreshed its place (its longest sleep
    // follows), and held to the promise for the others: taken within min(place TTL, ttl).
    { name: 'ttl 300, released just after the next waiter refreshed its place', ttl: 300, placeTtl: 3000, releaseAfterKillMs: 0, afterRefresh: true },
  ];
  for (const c of cases) {
    const title = c.afterRefresh
      ? `is taken by the next waiter within min(place TTL, its ttl) of the holder's release (${c.name})`
      : `is free within min(place TTL, its ttl) of the holder's release (${c.name})`;
    it(title, async () => {
      const key = `dead-${c.ttl}-${c.placeTtl}${c.afterRefresh ? '-refreshed' : ''}`;
      const lockKey = `lock:${key}`;
      const bound = Math.min(c.placeTtl, c.ttl);
      const { locker: a } = newLocker({ store: newStore() });
      const bStore = intercepted({ placeTtl: c.placeTtl });
      const { locker: b } = newLocker({ store: bStore });
      const aLease = await firstValueFrom(a.acquire(key));
      const child = fork(waiterFile, [], {
        execArgv: ['--import', 'tsx'],
        env: {
          ...process.env,
          HANDOFF_WAITER: JSON.stringify({ port: suite.server.port, key, placeTtl: c.placeTtl, ttl: c.ttl } satisfies HandoffWaiterSettings),
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const messages: unknown[] = [];
      const childTokens = new Set<string>();
      child.on('message', (m: unknown) => {
        messages.push(m);
        if (typeof m === 'object' && m !== null && 'token' in m) childTokens.add((m as { token: string }).token);
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      try {
        await eventually(() => messages.includes('ready'), 20_000);
        child.send('go');
        await eventually(async () => (await lineOf(suite.admin, lockKey)).some((p) => childTokens.has(p.token)), 3000);
        const childToken = (await lineOf(suite.admin, lockKey))[0]!.token;
        expect(childTokens.has(childToken)).toBe(true);

        // A live competitor waits behind it.
        const bLease = timedAcquire(b, key);
        await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 2, 1000);

        child.kill('SIGKILL');
        await exited;
        const killedAt = performance.now();
        if (c.releaseAfterKillMs > 0) await sleep(c.releaseAfterKillMs);
        if (c.afterRefresh) {
          const refreshes = () => bStore.calls('tryAcquireInLine', 'keep').filter((r) => r.settledAt !== undefined).length;
          const seen = refreshes();
          await eventually(() => refreshes() > seen, 1500, 1);
          await sleep(10);
        }
        const stalled = notRunFor();
        const releasedAt = performance.now();
        expect(await aLease.release()).toBe(true);
        // Handed to the dead child, first in line, with a TTL no longer than min(place TTL, ttl).
        const [holder, pttl] = await Promise.all([suite.admin.get(lockKey), suite.admin.pttl(lockKey)]);
        expect(holder).toBe(childToken);
        expect(pttl).toBeGreaterThan(0);
        expect(pttl).toBeLessThanOrEqual(bound);
        // The place the child refreshed last lapses at most its place TTL after the kill.
        expect(releasedAt - killedAt + pttl).toBeLessThanOrEqual(c.placeTtl + 50);

        const freedAt = await whenNotHeldBy(lockKey, childToken, bound + 1000);
        const { lease, at: bAt } = await bLease;
        // (plus the time this process did not run: its polls and B are that late)
        const margin = MARGIN + stalled();
        report(`dead waiter (${c.name})`, { pttlAtHandoff: pttl, freedAfterRelease: freedAt - releasedAt, bAcquiredAfterRelease: bAt - releasedAt, margin });
        expect(messages).not.toContain('acquired');
        // Free in Redis once the grant's TTL ran out…
        expect(freedAt - releasedAt).toBeLessThanOrEqual(bound + margin);
        if (c.afterRefresh) {
          // …and for the others: the next waiter in line takes it then (newcomers are refused while
          // it is first in line, so until it looks, nobody can have the key).
          expect(bAt - releasedAt).toBeLessThanOrEqual(bound + margin);
        } else {
          // …and taken by the live waiter at its next look: when the dead grant's TTL runs out (its
          // sleep is capped by the PTTL it saw), or at its next place refresh if that comes later
          // (a third of its place TTL at most).
          expect(bAt - releasedAt).toBeLessThanOrEqual(Math.max(bound, c.placeTtl / 3) + margin);
        }
        expect(await suite.admin.get(lockKey)).toBe(lease.token);
        expect(await lease.release()).toBe(true);
        expect(await lockKeyCount(suite.admin)).toBe(0);
      } finally {
        killIfRunning(child);
        await exited;
      }
    });
  }
});

describe('1. once a live grantee claims a handed-over key', () => {
  it("the key carries the grantee's ttl (10 s > place TTL 3 s) after its first renewal", async () => {
    const { locker: a } = newLocker({ store: newStore() });
    const { locker: g, events } = newLocker({ store: newStore({ placeTtl: 3000 }), ttl: 10_000 });
    const aLease = await firstValueFrom(a.acquire('claimed'));
    const gLease = timedAcquire(g, 'claimed');
    await eventually(async () => (await lineOf(suite.admin, 'lock:claimed')).length === 1, 1000);
    await sleep(200);
    expect(await aLease.release()).toBe(true);
    const { lease, at } = await gLease;
    const pttlAtClaim = await suite.admin.pttl('lock:claimed');
    // Handed over with the place's remaining life at most…
    expect(pttlAtClaim).toBeLessThanOrEqual(3000);
    // …and renewed to the grantee's own ttl within a third of that.
    await eventually(() => events.some((e) => e.type === 'renewed'), 1500);
    const renewedAt = performance.now();
    const pttl = await suite.admin.pttl('lock:claimed');
    report('claimed (renewal)', { pttlAtClaim, renewedAfterClaim: renewedAt - at, pttlAfterRenewal: pttl, leaseTtl: lease.ttl });
    expect(pttl).toBeGreaterThan(9000);
    expect(pttl).toBeLessThanOrEqual(10_000);
    expect(await suite.admin.get('lock:claimed')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
  });

  it('…and at once when renewal is off', async () => {
    const { locker: a } = newLocker({ store: newStore() });
    const { locker: g } = newLocker({ store: newStore({ placeTtl: 3000 }), ttl: 10_000, renew: false });
    const aLease = await firstValueFrom(a.acquire('claimed-norenew'));
    const gLease = timedAcquire(g, 'claimed-norenew');
    await eventually(async () => (await lineOf(suite.admin, 'lock:claimed-norenew')).length === 1, 1000);
    await sleep(200);
    expect(await aLease.release()).toBe(true);
    const { lease, at } = await gLease;
    await eventually(async () => (await suite.admin.pttl('lock:claimed-norenew')) > 9000, 500);
    report('claimed (renew: false)', { extendedAfterClaim: performance.now() - at });
    expect(await suite.admin.pttl('lock:claimed-norenew')).toBeLessThanOrEqual(10_000);
    expect(await lease.release()).toBe(true);
  });
});

describe("2. a waiter whose last call coincides with the holder's release", () => {
  it('takes the lock when the release comes just before its last attempt (place "leave") reaches Redis', async () => {
    const { locker: h } = newLocker({ store: newStore() });
    const ws = intercepted();
    const { locker: w, events } = newLocker({ store: ws, commandTimeout: 5000 });
    const hLease = await firstValueFrom(h.acquire('coincide'));
    let released: boolean | undefined;
    ws.hook = async (call) => {
      if (call.op === 'tryAcquireInLine' && call.place === 'leave' && released === undefined) released = await hLease.release();
    };
    const started = performance.now();
    const { lease, at } = await timedAcquire(w, 'coincide', { waitTimeout: 400 });
    const grant = await suite.admin.hget(keysOf('lock:coincide').places, 'grant');
    // It was the attempt at the wait limit, it met the release, and it took the key.
    expect(released).toBe(true);
    expect(at - started).toBeGreaterThanOrEqual(390);
    const last = ws.calls('tryAcquireInLine', 'leave');
    expect(last).toHaveLength(1);
    expect(last[0]!.result).toMatchObject({ acquired: true });
    expect(ws.calls('leave')).toEqual([]);
    expect(events.filter((e) => e.type === 'timed-out' || e.type === 'abandoned-released')).toEqual([]);
    // With the fence the release reserved for it.
    expect(grant).toMatch(new RegExp(`^${lease.token} ${lease.fence} \\d+$`));
    expect(lease.fence).toBeGreaterThan(hLease.fence);
    expect(await suite.admin.get('lock:coincide')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });

  it('takes the lock when the release comes just before its plain leave (a retry function that stops)', async () => {
    const { locker: h } = newLocker({ store: newStore() });
    const ws = intercepted();
    const { locker: w, events } = newLocker({ store: ws, commandTimeout: 5000 });
    const hLease = await firstValueFrom(h.acquire('coincide-leave'));
    let released: boolean | undefined;
    ws.hook = async (call) => {
      if (call.op === 'leave' && released === undefined) released = await hLease.release();
    };
    const { lease } = await timedAcquire(w, 'coincide-leave', { retry: (n: number) => (n > 3 ? EMPTY : timer(50)) });
    const grant = await suite.admin.hget(keysOf('lock:coincide-leave').places, 'grant');
    expect(released).toBe(true);
    // Three queued attempts, then the policy stopped and the session left the line…
    expect(ws.calls('tryAcquireInLine', 'keep').length).toBeGreaterThanOrEqual(3);
    const leaves = ws.calls('leave');
    expect(leaves).toHaveLength(1);
    expect(leaves[0]!.acquiresInFlight).toBe(0);
    // …to find the key handed to it: it holds it, with the hand-off's fence.
    expect(leaves[0]!.result).toMatchObject({ granted: true, fence: lease.fence });
    expect(grant).toMatch(new RegExp(`^${lease.token} ${lease.fence} \\d+$`));
    expect(lease.fence).toBeGreaterThan(hLease.fence);
    expect(events.filter((e) => e.type === 'timed-out' || e.type === 'abandoned-released')).toEqual([]);
    expect(await suite.admin.get('lock:coincide-leave')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    expect(await lockKeyCount(suite.admin)).toBe(0);
  });

  const lost = [
    { name: 'its plain leave is lost (ttl 1000, place TTL 3000)', path: 'leave' as const, ttl: 1000, placeTtl: 3000 },
    { name: 'its last attempt and the leave after it are lost (place TTL 600, ttl 30 s)', path: 'last attempt' as const, ttl: 30_000, placeTtl: 600 },
  ];
  for (const c of lost) {
    it(`is bounded by min(place TTL, ttl) when ${c.name}`, async () => {
      const key = `lost-${c.path === 'leave' ? 'leave' : 'last'}`;
      const lockKey = `lock:${key}`;
      const bound = Math.min(c.placeTtl, c.ttl);
      const { locker: h } = newLocker({ store: newStore() });
      const ws = intercepted({ placeTtl: c.placeTtl });
      const { locker: w, events } = newLocker({ store: ws, ttl: c.ttl, commandTimeout: 5000 });
      const { locker: x } = newLocker({ store: newStore({ placeTtl: c.placeTtl }) });
      const hLease = await firstValueFrom(h.acquire(key));
      let releasedAt = 0;
      let stalled = () => 0;
      ws.hook = async (call) => {
        const last = c.path === 'leave' ? call.op === 'leave' : call.op === 'tryAcquireInLine' && call.place === 'leave';
        if (last && releasedAt === 0) {
          // X waits behind W; then the release hands the key to W, and W's call is lost.
          await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 2, 1000);
          stalled = notRunFor();
          releasedAt = performance.now();
          expect(await hLease.release()).toBe(true);
        }
        if (call.op === 'leave' || (call.op === 'tryAcquireInLine' && call.place === 'leave')) throw new Error('lost on its way to Redis');
      };
      const options = c.path === 'leave' ? { retry: (n: number) => (n > 3 ? EMPTY : timer(50)) } : { waitTimeout: 400 };
      const wResult = firstValueFrom(w.acquire(key, options)).catch((e: unknown) => e);
      await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 1, 1000);
      const wToken = (await lineOf(suite.admin, lockKey))[0]!.token;
      const xLease = timedAcquire(x, key);
      // W fails (its store call failed), the key is W's for what its grant allows.
      expect(isLockStoreError(await wResult)).toBe(true);
      expect(releasedAt).toBeGreaterThan(0);
      const [holder, pttl] = await Promise.all([suite.admin.get(lockKey), suite.admin.pttl(lockKey)]);
      expect(holder).toBe(wToken);
      expect(pttl).toBeLessThanOrEqual(bound);
      const freedAt = await whenNotHeldBy(lockKey, wToken, bound + 1000);
      const { lease, at } = await xLease;
      // (plus the time this process did not run: its polls and X are that late)
      const margin = MARGIN + stalled();
      report(`lost (${c.name})`, { pttlAtFailure: pttl, freedAfterRelease: freedAt - releasedAt, xAcquiredAfterRelease: at - releasedAt, margin });
      expect(freedAt - releasedAt).toBeLessThanOrEqual(bound + margin);
      expect(at - releasedAt).toBeLessThanOrEqual(bound + margin);
      expect(lease.fence).toBeGreaterThan(hLease.fence);
      expect(events.filter((e) => e.type === 'acquired')).toEqual([]);
      expect(await lease.release()).toBe(true);
    });
  }

  /**
   * W's retry function stops; its plain leave is sent just after the holder handed W the key, to a
   * server paused at that moment. W's locker has commandTimeout 300 ms; the server resumes at 700 ms.
   */
  async function pausedLeave(key: string) {
    const lockKey = `lock:${key}`;
    const { locker: h } = newLocker({ store: newStore() });
    const ws = intercepted();
    const { locker: w, events } = newLocker({ store: ws, commandTimeout: 300 });
    const { locker: x } = newLocker({ store: newStore() });
    const hLease = await firstValueFrom(h.acquire(key));
    let pausedAt = 0;
    ws.hook = async (call) => {
      if (call.op === 'leave' && pausedAt === 0) {
        await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 2, 1000);
        expect(await hLease.release()).toBe(true);
        suite.server.pause();
        pausedAt = performance.now();
      }
    };
    const wResult = firstValueFrom(w.acquire(key, { retry: (n: number) => (n > 3 ? EMPTY : timer(50)) })).catch((e: unknown) => e);
    await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 1, 1000);
    const wToken = (await lineOf(suite.admin, lockKey))[0]!.token;
    const xLease = timedAcquire(x, key);
    let resumedAt = 0;
    let wError: unknown;
    try {
      await eventually(() => pausedAt > 0, 2000);
      wError = await wResult;
      await sleep(Math.max(0, pausedAt + 700 - performance.now()));
    } finally {
      suite.server.resume();
      resumedAt = performance.now();
    }
    const { lease, at } = await xLease;
    await eventually(() => ws.inFlight === 0, 1000);
    await sleep(50);
    const calls = ws.log.map((c) => ({
      op: c.op,
      place: c.place,
      calledAt: Math.round(c.calledAt - pausedAt),
      settledAt: c.settledAt && Math.round(c.settledAt - pausedAt),
      leavesInFlight: c.leavesInFlight,
      result: c.result,
    }));
    report(`paused leave (${key})`, { xAcquiredAfterResume: at - resumedAt, calls });
    expect(await suite.admin.get(lockKey)).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    return { ws, events, wToken, wError, xAcquiredAfterResume: at - resumedAt };
  }

  it('gives the key back once a leave that met a paused server is answered', async () => {
    const { events, wToken, wError, xAcquiredAfterResume } = await pausedLeave('paused-leave');
    // The leave was not answered within commandTimeout: W failed…
    expect(isLockStoreError(wError)).toBe(true);
    // …and when it was answered, late, finding the key handed to W, W gave the key back: X got it.
    expect(events).toContainEqual({ type: 'abandoned-released', key: 'paused-leave', token: wToken, deleted: true });
    expect(xAcquiredAfterResume).toBeLessThanOrEqual(MARGIN);
  });

  it('sends that leave once: not again while it is still in flight (one grant, one give-back)', async () => {
    const { ws, events } = await pausedLeave('paused-leave-once');
    // A leave may only go out once every earlier call of the session was settled by the store
    // (a second one, after the first was answered, finds the key given back already)…
    const leaves = ws.calls('leave');
    expect(leaves.length).toBeGreaterThanOrEqual(1);
    expect(
      leaves
        .filter((c) => c.leavesInFlight > 0 || c.acquiresInFlight > 0)
        .map((c) => ({ seq: c.seq, leavesInFlight: c.leavesInFlight, acquiresInFlight: c.acquiresInFlight })),
    ).toEqual([]);
    // …so the one grant is given back once.
    expect(events.filter((e) => e.type === 'abandoned-released')).toHaveLength(1);
  });
});

describe('3. a waiter whose retry delay is longer than its place TTL', () => {
  interface LineSample {
    /** ms since W1 subscribed */
    readonly at: number;
    readonly line: Array<{ token: string; score: number }>;
    /** token → when its place lapses (server ms) */
    readonly lapseAt: Map<string, number>;
    /** the server's clock (ms) */
    readonly now: number;
  }

  async function sampleLine(lockKey: string, t0: number): Promise<LineSample> {
    const { line, places } = keysOf(lockKey);
    const [[, flat], [, hash], [, time]] = (await suite.admin.pipeline().zrange(line, '0', '-1', 'WITHSCORES').hgetall(places).time().exec())! as [
      [null, string[]],
      [null, Record<string, string>],
      [null, [string, string]],
    ];
    const entries: Array<{ token: string; score: number }> = [];
    for (let i = 0; i < flat.length; i += 2) entries.push({ token: flat[i]!, score: Number(flat[i + 1]) });
    const lapseAt = new Map<string, number>();
    for (const [field, value] of Object.entries(hash)) if (field.startsWith('w:')) lapseAt.set(field.slice(2), Number(value.split(' ')[0]));
    return { at: performance.now() - t0, line: entries, lapseAt, now: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000) };
  }

  /**
   * W1 (place TTL 300 ms, `retry: () => timer(2000)`) waits first; W2 (default retry) arrives
   * 400 ms later; the holder releases at `releaseAt` ms. Samples the line every 10 ms.
   */
  async function slowRetry(key: string, w1: Locker, releaseAt: number) {
    const lockKey = `lock:${key}`;
    const { locker: h } = newLocker({ store: newStore() });
    const { locker: w2 } = newLocker({ store: newStore({ placeTtl: 300 }) });
    const hLease = await firstValueFrom(h.acquire(key));
    const order: string[] = [];
    const samples: LineSample[] = [];
    let sampling = true;
    const t0 = performance.now();
    const sampler = (async () => {
      while (sampling) {
        samples.push(await sampleLine(lockKey, t0));
        await sleep(10);
      }
    })();
    const hold =
      (name: string) =>
      async ({ lease }: { lease: Lease }) => {
        order.push(name);
        await sleep(30);
        await lease.release();
        return lease;
      };
    const w1Lease = timedAcquire(w1, key, { retry: () => timer(2000) }).then(hold('w1'));
    await sleep(400);
    const w2Lease = timedAcquire(w2, key).then(hold('w2'));
    await sleep(Math.max(0, t0 + releaseAt - performance.now()));
    const releasedAt = performance.now() - t0;
    expect(await hLease.release()).toBe(true);
    const [l1] = await Promise.all([w1Lease, w2Lease]);
    sampling = false;
    await sampler;
    const before = samples.filter((s) => s.at < releasedAt);
    const firstSeen = before.findIndex((s) => s.line.some((p) => p.token === l1.token));
    const w1Places = before.slice(Math.max(0, firstSeen)).map((s) => ({
      at: Math.round(s.at),
      rank: s.line.findIndex((p) => p.token === l1.token),
      score: s.line.find((p) => p.token === l1.token)?.score,
      live: (s.lapseAt.get(l1.token) ?? 0) > s.now,
    }));
    const faults = w1Places.filter((p) => p.rank !== 0 || !p.live);
    report(`slow retry (${key})`, {
      order,
      w1FirstInLineAt: firstSeen < 0 ? null : Math.round(before[firstSeen]!.at),
      releasedAt: Math.round(releasedAt),
      notFirstOrLapsed: faults.length,
      of: w1Places.length,
      firstFaults: faults.slice(0, 3),
    });
    return { order, firstSeenAt: firstSeen < 0 ? undefined : before[firstSeen]!.at, w1Places };
  }

  function expectKeptItsPlace({ order, firstSeenAt, w1Places }: Awaited<ReturnType<typeof slowRetry>>) {
    // W1 took a place at once (long before W2 arrived at 400 ms)…
    expect(firstSeenAt, 'W1 never in line before the release').toBeDefined();
    expect(firstSeenAt!).toBeLessThan(300);
    // …and its place stayed first in line and live, with the same arrival time, until the release…
    expect(w1Places.filter((p) => p.rank !== 0 || !p.live)).toEqual([]);
    expect(new Set(w1Places.map((p) => p.score)).size).toBe(1);
    // …which handed the key to W1 before W2.
    expect(order).toEqual(['w1', 'w2']);
  }

  /** W1's locker met contention a moment ago (a wait on another key timed out): it queues with its first attempt. */
  async function contendedJustBefore(w1: Locker): Promise<void> {
    const { locker: h } = newLocker({ store: newStore() });
    await firstValueFrom(h.acquire('elsewhere'));
    const error = await firstValueFrom(w1.acquire('elsewhere', { waitTimeout: 100 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
  }

  it('keeps its place while the policy sleeps, and is served before a later competitor', async () => {
    const { locker: w1 } = newLocker({ store: newStore({ placeTtl: 300 }) });
    expectKeptItsPlace(await slowRetry('slow-retry', w1, 2600));
  });

  it('keeps its place while the policy sleeps, when it queued with its first attempt (wake-up on)', async () => {
    const { locker: w1 } = newLocker({ store: newStore({ placeTtl: 300 }) });
    await contendedJustBefore(w1);
    expectKeptItsPlace(await slowRetry('slow-retry-queued', w1, 1200));
  });

  it('keeps its place while the policy sleeps, when it queued with its first attempt (wake-up off: the control)', async () => {
    const { locker: w1 } = newLocker({ store: newStore({ placeTtl: 300, wakeUp: false }) });
    await contendedJustBefore(w1);
    expectKeptItsPlace(await slowRetry('slow-retry-polling', w1, 1200));
  });
});
