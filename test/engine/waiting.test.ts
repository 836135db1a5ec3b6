/**
 * Waiting for a held lock, on a virtual clock: back-off sleeps drawn from the configured jitter
 * with an injected random source, the wait limit, and custom retry policies. The store is a real
 * MemoryLockStore whose clock is the TestScheduler's.
 */
import { throwError, timer, EMPTY } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, LockTimeoutError, MemoryLockStore, type LockerOptions } from '../../src/index.js';
import { observeAcquisition } from '../support/observedAcquisition.js';
import { RecordingStore } from '../support/recordingStore.js';
import { runUntil } from '../support/virtualTime.js';

let scheduler: TestScheduler;
let memory: MemoryLockStore;
let store: RecordingStore;

beforeEach(() => {
  scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  memory = new MemoryLockStore({ clock: () => scheduler.now() });
  store = new RecordingStore(memory, () => scheduler.now());
});

/** A random source that plays back `values` in a loop. */
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

const lockerWith = (options: LockerOptions) => createLocker({ store, scheduler, keyPrefix: '', ...options });

/** Subscribes to an acquisition and collects what happens (on the virtual clock). */
const observe = (locker: ReturnType<typeof lockerWith>, key: string, options?: Parameters<typeof locker.acquire>[1]) =>
  observeAcquisition(locker, key, options, () => scheduler.now());

const attemptTimes = () => store.calls.filter((c) => c.op === 'tryAcquire' && c.token !== 'holder').map((c) => c.at);
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

describe('back-off on a held lock (virtual clock)', () => {
  it('sleeps minDelay + random() * jitter between attempts', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const locker = lockerWith({ retry: { minDelay: 100, jitter: 40 }, random: sequence(0, 0.5, 0.999, 0.25), waitTimeout: 100_000 });
    const outcome = observe(locker, 'k');
    await runUntil(scheduler, () => attemptTimes().length >= 5);
    outcome.sub!.unsubscribe();
    const observed = gaps(attemptTimes());
    expect(observed).toHaveLength(4);
    [100, 120, 139.96, 110].forEach((expected, i) => expect(observed[i]).toBeCloseTo(expected, 6));
  });

  it('uses the default jitter of [10, 30) ms', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const locker = lockerWith({ random: sequence(0, 0.5, 0.9999) });
    const outcome = observe(locker, 'k');
    await runUntil(scheduler, () => attemptTimes().length >= 4);
    outcome.sub!.unsubscribe();
    const observed = gaps(attemptTimes());
    [10, 20, 29.998].forEach((expected, i) => expect(observed[i]).toBeCloseTo(expected, 6));
  });

  it('fails with LockTimeoutError after waitTimeout, the last sleep cut to what is left of the wait', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const locker = lockerWith({ retry: { minDelay: 100, jitter: 0 }, waitTimeout: 250 });
    const outcome = observe(locker, 'k');
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(attemptTimes()).toEqual([0, 100, 200, 250]);
    expect(outcome.at).toBe(250);
    const error = outcome.error as LockTimeoutError;
    expect(isLockTimeoutError(error)).toBe(true);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error.key).toBe('k');
    expect(error.waitedMs).toBe(250);
    expect(error.attempts).toBe(4);
  });

  it('makes exactly one attempt when waitTimeout is 0', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const outcome = observe(lockerWith({ waitTimeout: 0 }), 'k');
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(attemptTimes()).toEqual([0]);
    expect((outcome.error as LockTimeoutError).attempts).toBe(1);
  });

  it("gets the lock once the holder's TTL runs out on the store's clock, sleeping no longer than that TTL", async () => {
    await memory.tryAcquire('k', 'holder', 333);
    const locker = lockerWith({ retry: { minDelay: 100, jitter: 0 }, waitTimeout: Infinity });
    const outcome = observe(locker, 'k');
    await runUntil(scheduler, () => outcome.lease !== undefined);
    // the last sleep is cut to the holder's remaining TTL (33 ms at 300) + 1 ms
    expect(outcome.at).toBe(334);
    expect(attemptTimes()).toEqual([0, 100, 200, 300, 334]);
    await outcome.lease!.release();
  });

  it('stops attempting when unsubscribed during a sleep', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const outcome = observe(lockerWith({ retry: { minDelay: 100, jitter: 0 } }), 'k');
    await runUntil(scheduler, () => attemptTimes().length === 2);
    outcome.sub!.unsubscribe();
    expect(scheduler.actions).toHaveLength(0);
    expect(outcome.error).toBeUndefined();
  });
});

describe('custom retry policies (virtual clock)', () => {
  it('starts the next attempt when the returned input emits, with the attempt number', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const seen: number[] = [];
    const retry = (attempt: number) => {
      seen.push(attempt);
      return timer(attempt * 10, scheduler);
    };
    const outcome = observe(lockerWith({ retry, waitTimeout: 100_000 }), 'k');
    await runUntil(scheduler, () => attemptTimes().length >= 4);
    outcome.sub!.unsubscribe();
    expect(attemptTimes()).toEqual([0, 10, 30, 60]);
    expect(seen.slice(0, 3)).toEqual([1, 2, 3]);
  });

  it('still honours the wait limit when the policy is slower', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const outcome = observe(lockerWith({ retry: () => timer(10_000, scheduler), waitTimeout: 300 }), 'k');
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(attemptTimes()).toEqual([0, 300]);
    expect(isLockTimeoutError(outcome.error)).toBe(true);
  });

  it('gives up with LockTimeoutError when the policy completes without emitting', async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const outcome = observe(lockerWith({ retry: () => EMPTY }), 'k');
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(attemptTimes()).toEqual([0]);
    expect(isLockTimeoutError(outcome.error)).toBe(true);
  });

  it("errors with the policy's own error", async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const boom = new Error('policy says no');
    const outcome = observe(lockerWith({ retry: () => throwError(() => boom) }), 'k');
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(outcome.error).toBe(boom);
  });

  it("per-call options override the locker's", async () => {
    await memory.tryAcquire('k', 'holder', 1_000_000);
    const locker = lockerWith({ retry: { minDelay: 100, jitter: 0 }, waitTimeout: 10_000 });
    const outcome = observe(locker, 'k', { retry: { minDelay: 7, jitter: 0 }, waitTimeout: 21 });
    await runUntil(scheduler, () => outcome.error !== undefined);
    expect(attemptTimes()).toEqual([0, 7, 14, 21]);
  });
});
