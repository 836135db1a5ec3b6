/**
 * The local gate and the cohort hand-off, on the in-memory store: waiters of one process queue
 * FIFO per key and only the first talks to the store; a release is answered before the next
 * waiter goes to the store, at once; the lock passes between local holders without the store, a
 * bounded number of times, with growing fences; gates exist only while their key is in use, so a
 * million keys passing through leave no trace.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defer, finalize, firstValueFrom, lastValueFrom, merge, NEVER, of, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  createLocker,
  DEFAULTS,
  isLockTimeoutError,
  LockOptionsError,
  MemoryLockStore,
  type LockEvent,
  type LockerOptions,
  type LockStore,
} from '../../src/index.js';
import { LockEngine } from '../../src/engine/LockEngine.js';
import { CohortPolicy, type HandoffPolicy } from '../../src/engine/handoff/HandoffPolicy.js';
import { resolveLockerOptions } from '../../src/options/validate.js';
import { FenceBlock } from '../../src/engine/fencing/FenceBlock.js';
import { recordingLocker } from '../support/recordingStore.js';

function setup(options: LockerOptions = {}) {
  const made = recordingLocker(options);
  return { ...made, engine: made.locker as unknown as LockEngine };
}

describe('local gate', () => {
  for (const cohort of [false, { maxMs: 60_000 }] as const) {
    it(`grants local waiters in arrival order, and only the first one asks the store (cohort ${cohort === false ? 'off' : 'on'})`, async () => {
      const { store, locker } = setup({ cohort });
      const order: number[] = [];
      const runs = Array.from({ length: 6 }, (_, i) =>
        lastValueFrom(
          defer(() => {
            order.push(i);
            return timer(5);
          }).pipe(locker.withLock('k')),
        ),
      );
      // all six are waiting before the first is even granted
      await Promise.all(runs);
      expect(order).toEqual([0, 1, 2, 3, 4, 5]);
      // with the cohort hand-off, one store grant serves them all; without, one each, and never an
      // attempt that finds the key held by this very process
      const attempts = store.count('tryAcquire');
      expect(attempts).toBe(cohort === false ? 6 : 1);
      expect(store.count('release')).toBe(cohort === false ? 6 : 1);
    });
  }

  it('gives the store lock back before the next local waiter asks for it, and that waiter asks at once', async () => {
    const { store, locker } = setup({ cohort: false });
    await Promise.all([lastValueFrom(timer(10).pipe(locker.withLock('k'))), lastValueFrom(timer(10).pipe(locker.withLock('k')))]);
    const ops = store.calls.map((c) => c.op);
    expect(ops).toEqual(['tryAcquire', 'release', 'tryAcquire', 'release']);
    // the second attempt follows the first release with no back-off sleep (10–30 ms by default)
    expect(store.calls[2]!.at - store.calls[1]!.at).toBeLessThan(5);
  });

  it('times out waiters queued behind a local holder at their own wait limit, without store calls', async () => {
    const { store, locker, events } = setup();
    const holder = await firstValueFrom(locker.acquire('k'));
    const started = performance.now();
    const errors = await Promise.all([
      firstValueFrom(locker.acquire('k', { waitTimeout: 50 })).catch((e: unknown) => e),
      firstValueFrom(locker.acquire('k', { waitTimeout: 0 })).catch((e: unknown) => e),
    ]);
    expect(errors.every(isLockTimeoutError)).toBe(true);
    expect(errors[0]).toMatchObject({ attempts: 1 }); // its one look at the local line
    expect(performance.now() - started).toBeGreaterThanOrEqual(49);
    expect(store.count('tryAcquire')).toBe(1);
    expect(events.filter((e) => e.type === 'timed-out')).toHaveLength(2);
    await holder.release();
  });

  it('a waiter that leaves the line lets the next one through; the first waiter leaving hands its store session on', async () => {
    const { memory, locker } = setup({ retry: { minDelay: 5, jitter: 0 } });
    await memory.tryAcquire('k', 'other-process', 60);
    const granted: string[] = [];
    const a = locker.acquire('k').subscribe((l) => (granted.push('a'), void l.release()));
    const b = locker.acquire('k').subscribe((l) => (granted.push('b'), void l.release()));
    const c = lastValueFrom(locker.acquire('k')).then((l) => (granted.push('c'), l.release()));
    await new Promise((r) => setTimeout(r, 20));
    a.unsubscribe(); // the first in line leaves while its session polls
    b.unsubscribe();
    await c;
    expect(granted).toEqual(['c']);
  });

  it('keeps a gate only while its key is in use: the map is empty when all streams end', async () => {
    const { engine, locker } = setup();
    const subs = Array.from({ length: 200 }, (_, i) => NEVER.pipe(locker.withLock(`k${i % 20}`)).subscribe());
    await new Promise((r) => setTimeout(r, 10));
    expect(engine.liveKeys).toBe(20);
    subs.forEach((s) => s.unsubscribe());
    await new Promise((r) => setTimeout(r, 10));
    expect(engine.liveKeys).toBe(0);
  });

  it.skipIf(process.env.MUTATION === '1')(
    '1,000,000 distinct keys passing through leave the heap within 5 MB of where it started',
    async () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      const store = new MemoryLockStore();
      const locker = createLocker({ store, keyPrefix: '' });
      const engine = locker as unknown as LockEngine;
      const settle = () => new Promise((r) => setImmediate(r));
      /** `count` acquisitions of distinct keys, 100 at a time, each released at once. */
      const passThrough = async (prefix: string, count: number) => {
        for (let i = 0; i < count; i += 100) {
          await Promise.all(Array.from({ length: 100 }, (_, j) => firstValueFrom(locker.acquire(`${prefix}:${i + j}`)).then((lease) => lease.release())));
        }
      };
      // warm up the code paths first, so the baseline includes compiled code
      await passThrough('warm', 20_000);
      await settle();
      gc();
      const before = process.memoryUsage().heapUsed;
      await passThrough('key', 1_000_000);
      await settle();
      gc();
      const after = process.memoryUsage().heapUsed;
      expect(engine.liveKeys).toBe(0);
      expect(store.size).toBe(0);
      expect(engine.scheduledRenewals).toBeLessThan(5000);
      expect((after - before) / 2 ** 20).toBeLessThan(5);
    },
    60_000,
  );
});

describe('cohort hand-off', () => {
  it('passes the lock to the next local waiter without the store, each holder with a higher fence', async () => {
    const { store, locker, events } = setup({ cohort: { maxMs: 60_000 } });
    const fences: number[] = [];
    await Promise.all(Array.from({ length: 5 }, () => lastValueFrom(locker.using('k', (lease) => (fences.push(lease.fence), timer(1))))));
    expect(fences).toEqual([fences[0], fences[0]! + 1, fences[0]! + 2, fences[0]! + 3, fences[0]! + 4]);
    expect(store.count('tryAcquire')).toBe(1);
    const released = events.filter((e): e is Extract<LockEvent, { type: 'released' }> => e.type === 'released');
    // the holders that passed it on are reported once the store confirmed the lease (its release)
    expect(released.map((e) => e.outcome)).toEqual(['passed', 'passed', 'passed', 'passed', 'released']);
    expect(released.map((e) => e.fence)).toEqual(fences);
    // the next grant from the store is above every fence handed out locally
    const next = await firstValueFrom(locker.acquire('k'));
    expect(next.fence).toBeGreaterThan(fences[4]!);
    await next.release();
  });

  it('goes back to the store after cohort.maxPasses hand-offs', async () => {
    const { store, locker } = setup({ cohort: { maxPasses: 2, maxMs: 60_000 } });
    await Promise.all(Array.from({ length: 7 }, () => lastValueFrom(timer(1).pipe(locker.withLock('k')))));
    // 7 holders, 3 per store grant: grants at holders 1, 4 and 7
    expect(store.count('tryAcquire')).toBe(3);
    expect(store.count('release')).toBe(3);
  });

  it('goes back to the store once cohort.maxMs has passed since the store grant', async () => {
    const { store, locker } = setup({ cohort: { maxPasses: 1000, maxMs: 25 } });
    await Promise.all(Array.from({ length: 6 }, () => lastValueFrom(timer(10).pipe(locker.withLock('k')))));
    // holders of ~10 ms each: a grant serves the holders that start within 25 ms of it (three)
    expect(store.count('tryAcquire')).toBeGreaterThanOrEqual(2);
    expect(store.count('tryAcquire')).toBeLessThanOrEqual(3);
  });

  it('does not pass to a waiter that asked for another TTL, and a chain of synchronous holders does not grow the stack', async () => {
    const { store, locker } = setup();
    await Promise.all([lastValueFrom(timer(1).pipe(locker.withLock('k', { ttl: 5000 }))), lastValueFrom(of(1).pipe(locker.withLock('k', { ttl: 6000 })))]);
    expect(store.count('tryAcquire')).toBe(2);
    // 5,000 waiters whose work completes synchronously: handed over in microtasks, not recursively
    let done = 0;
    await lastValueFrom(
      merge(
        ...Array.from({ length: 5000 }, () =>
          of(1).pipe(
            locker.withLock('sync'),
            finalize(() => done++),
          ),
        ),
      ),
    );
    expect(done).toBe(5000);
  });

  it('a holder whose lease is lost does not pass it on: the next waiter goes to the store', async () => {
    const { memory, store, locker, events } = setup({ ttl: 300 });
    const first = firstValueFrom(locker.acquire('k'));
    const lease = await first;
    const second = lastValueFrom(locker.using('k', (l) => of(l.fence)));
    memory['entries'].delete('k'); // someone deleted our key
    await memory.tryAcquire('k', 'intruder', 150); // outlives the next renewal (every 100 ms)
    const lost = await firstValueFrom(lease.lost$);
    expect(lost.reason).toBe('taken-over');
    const fence = await second; // granted by the store once the intruder's 150 ms ran out
    expect(fence).toBeGreaterThan(lease.fence);
    expect(store.count('tryAcquire')).toBeGreaterThanOrEqual(2);
    expect(events.some((e) => e.type === 'lost')).toBe(true);
    await lease.release();
  });
});

describe('a hand-off policy given to the engine', () => {
  it('replaces the cohort policy of the settings: every grant starts a turn of it, and it decides the passes', async () => {
    const memory = new MemoryLockStore();
    let tries = 0;
    const store: LockStore = {
      tryAcquire: (key, token, ttl, fences) => (tries++, memory.tryAcquire(key, token, ttl, fences)),
      release: (key, token) => memory.release(key, token),
      extend: (key, token, ttl) => memory.extend(key, token, ttl),
    };
    const calls: string[] = [];
    const never: HandoffPolicy = {
      fencesFor: () => (calls.push('fencesFor'), 1),
      startTurn: (fences, storeWaiting, _localWaiting, now) => (calls.push('startTurn'), { fences, grantedAt: now, passes: 0, storeWaiting }),
      mayPass: () => (calls.push('mayPass'), false),
      pass: () => undefined,
    };
    // (the settings' cohort, the default one, would pass the lock to the local waiter)
    const engine = new LockEngine(
      resolveLockerOptions({ store, keyPrefix: '' }, () => memory),
      { handoff: never },
    );
    await Promise.all(Array.from({ length: 2 }, () => lastValueFrom(timer(20).pipe(engine.withLock('k')))));
    expect(tries).toBe(2);
    expect(calls.filter((c) => c === 'startTurn')).toHaveLength(2);
    await engine.close();
    memory.close();
  });
});

describe('cohort turns sized by the store line', () => {
  it('a grant with many processes in line gets a short turn, with few a long one, capped by maxMs', () => {
    const policy = new CohortPolicy(DEFAULTS.cohort);
    expect(policy.turnMs(undefined)).toBe(12); // no line information (memory store): maxMs
    expect(policy.turnMs(0)).toBe(12);
    expect(policy.turnMs(1)).toBe(12); // 24 / 2
    expect(policy.turnMs(2)).toBe(8);
    expect(policy.turnMs(7)).toBe(3); // eight processes: the line goes round in ~24 ms
    const custom = new CohortPolicy({ maxPasses: 256, maxMs: 50, roundMs: 100, batchMs: 100 });
    expect(custom.turnMs(0)).toBe(50);
    expect(custom.turnMs(3)).toBe(25);
  });
});

describe('cohort batch: the waiters in line at the grant', () => {
  const bounds = { maxPasses: 256, maxMs: 12, roundMs: 24, batchMs: 48 };
  const block = () => new FenceBlock(1, 257);
  const passAt = (policy: CohortPolicy, turn: ReturnType<CohortPolicy['startTurn']>, now: number) => {
    const may = policy.mayPass(turn, now);
    if (may) policy.pass(turn);
    return may;
  };

  it('each gets a pass past maxMs while the turn is younger than batchMs; later waiters only within the turn', () => {
    const policy = new CohortPolicy(bounds);
    // 7 other processes in line: the turn after the batch is 24 / 8 = 3 ms
    const turn = policy.startTurn(block(), 7, 3, 0);
    expect([passAt(policy, turn, 20), passAt(policy, turn, 30), passAt(policy, turn, 47.9)]).toEqual([true, true, true]);
    expect(passAt(policy, turn, 47.9)).toBe(false); // a fourth, who came after the grant
    // a batch served quickly: waiters who came after the grant get passes for the turn (3 ms)
    const quick = policy.startTurn(block(), 7, 1, 0);
    expect([passAt(policy, quick, 1), passAt(policy, quick, 2.9), passAt(policy, quick, 3)]).toEqual([true, true, false]);
  });

  it('is cut at batchMs, at maxPasses and when the fences run out', () => {
    const policy = new CohortPolicy(bounds);
    expect(passAt(policy, policy.startTurn(block(), 7, 3, 0), 48)).toBe(false);
    const few = new CohortPolicy({ ...bounds, maxPasses: 2 });
    const turn = few.startTurn(block(), 7, 5, 0);
    expect([passAt(few, turn, 1), passAt(few, turn, 2), passAt(few, turn, 3)]).toEqual([true, true, false]);
    const small = policy.startTurn(new FenceBlock(1, 2), 7, 5, 0);
    expect([passAt(policy, small, 1), passAt(policy, small, 2)]).toEqual([true, false]);
  });

  it('a batchMs below maxMs counts as maxMs; maxMs 0 passes nothing', () => {
    const policy = new CohortPolicy({ ...bounds, batchMs: 5 });
    const turn = policy.startTurn(block(), 7, 3, 0);
    expect([passAt(policy, turn, 10), passAt(policy, turn, 12)]).toEqual([true, false]);
    const off = new CohortPolicy({ ...bounds, maxMs: 0 });
    expect(off.fencesFor(3)).toBe(1);
    expect(passAt(off, off.startTurn(new FenceBlock(1, off.fencesFor(3)), 0, 3, 0), 0)).toBe(false);
  });

  it('cohort.batchMs: 48 by default; a bad value is refused with an error that names it and the range', () => {
    expect(DEFAULTS.cohort.batchMs).toBe(48);
    for (const batchMs of [-1, 1.5, Number.NaN, '10', 2 ** 31]) {
      const error = (() => {
        try {
          createLocker({ cohort: { batchMs } } as never);
        } catch (e) {
          return e;
        }
      })();
      expect(error, String(batchMs)).toBeInstanceOf(LockOptionsError);
      expect((error as Error).message).toContain('cohort.batchMs');
      expect((error as Error).message).toContain('2147483647');
    }
    expect(() => createLocker({ cohort: { batchMs: 0 } })).not.toThrow();
  });

  it('on a locker: holders that stretch past maxMs still pass to every waiter that was in line at the grant', async () => {
    const { store, locker } = setup({ cohort: { maxMs: 12, batchMs: 200 } });
    // 4 waiters at once (in line at the first grant), each holding ~20 ms: the batch outlives maxMs
    await Promise.all(Array.from({ length: 4 }, () => lastValueFrom(timer(20).pipe(locker.withLock('k')))));
    expect(store.count('tryAcquire')).toBe(1);
    // batchMs is a bound too: with holds of ~40 ms and batchMs 60, the batch is cut after two
    const cut = setup({ cohort: { maxMs: 12, batchMs: 60 } });
    await Promise.all(Array.from({ length: 4 }, () => lastValueFrom(timer(40).pipe(cut.locker.withLock('k')))));
    expect(cut.store.count('tryAcquire')).toBe(2);
  });
});

describe('a store too slow for the TTL', () => {
  it('grants that arrive with no validity left are retried only until the wait is over', async () => {
    const memory = new MemoryLockStore();
    const slow: LockStore = {
      tryAcquire: async (key, token, ttl) => {
        const answer = await memory.tryAcquire(key, token, ttl);
        await new Promise((r) => setTimeout(r, 150)); // every answer takes longer than the 97 ms validity
        return answer;
      },
      release: (key, token) => memory.release(key, token),
      extend: (key, token, ttl) => memory.extend(key, token, ttl),
    };
    const locker = createLocker({ store: slow, keyPrefix: '', ttl: 100 });
    const started = performance.now();
    const error = await firstValueFrom(locker.acquire('slow', { waitTimeout: 500 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1500);
    await new Promise((r) => setTimeout(r, 50));
    expect((locker as unknown as LockEngine).liveKeys).toBe(0);
    expect(memory.size).toBe(0);
  });
});
