/**
 * The wait limits of acquisitions that wait behind a holder of their own locker (the local gate):
 * one timer per gate, for the earliest limit (src/engine/gate/LocalDeadlines.ts), where each such
 * waiter had a timer of its own. On a virtual clock, with a real MemoryLockStore on that clock:
 * every waiter still times out at its own limit — also one that joined later with a shorter one —
 * none early, none late; a waiter that is handed the lock leaves no timer behind; and once nobody
 * waits locally, no timer is left.
 */
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type Lease, type LockEvent, type LockTimeoutError } from '../../src/index.js';
import { observeAcquisition } from '../support/observedAcquisition.js';
import { runUntil } from '../support/virtualTime.js';

let scheduler: TestScheduler;
let store: MemoryLockStore;

beforeEach(() => {
  scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  store = new MemoryLockStore({ clock: () => scheduler.now() });
});

const lockerOn = () => createLocker({ store, scheduler, keyPrefix: '', renew: false, ttl: 1_000_000 });

const observe = (locker: ReturnType<typeof lockerOn>, key: string, waitTimeout: number, ttl?: number) =>
  observeAcquisition(locker, key, ttl === undefined ? { waitTimeout } : { waitTimeout, ttl }, () => scheduler.now());

/** Moves the virtual clock to frame `t` (a no-op action marks it). */
async function advanceTo(t: number): Promise<void> {
  scheduler.schedule(() => undefined, t - scheduler.now());
  await runUntil(scheduler, () => scheduler.now() >= t);
}

/** Scheduled actions left on the virtual clock (the locker's timers: leases do not renew here). */
const timersLeft = () => scheduler.actions.length;

describe('local wait limits (virtual clock)', () => {
  it('times each local waiter out at its own limit, in the order the limits come, whatever order they joined in', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const long = observe(locker, 'k', 500);
    await advanceTo(100);
    const short = observe(locker, 'k', 100); // joins later, its limit (200) comes first
    const middle = observe(locker, 'k', 300); // limit 400
    await runUntil(scheduler, () => long.error !== undefined, 10_000);
    for (const [outcome, at] of [
      [short, 200],
      [middle, 400],
      [long, 500],
    ] as const) {
      expect(isLockTimeoutError(outcome.error)).toBe(true);
      expect(outcome.at).toBe(at);
    }
    expect((short.error as LockTimeoutError).waitedMs).toBe(100);
    expect(timersLeft()).toBe(0);
    await holder.release();
  });

  it('after a limit, arms the timer for the earliest one left, not for the last in line', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const first = observe(locker, 'k', 200);
    const second = observe(locker, 'k', 300);
    const third = observe(locker, 'k', 1_000);
    await runUntil(scheduler, () => third.error !== undefined, 10_000);
    expect([first.at, second.at, third.at]).toEqual([200, 300, 1_000]);
    await holder.release();
  });

  it('fires for nobody when the earliest waiter was handed the lock, and still times the next one out at its limit', async () => {
    const locker = lockerOn();
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const first = observe(locker, 'k', 100); // limit 100: handed the lock at 50
    const second = observe(locker, 'k', 1_000); // limit 1000
    await advanceTo(50);
    await holder.release();
    await runUntil(scheduler, () => first.lease !== undefined);
    expect(first.at).toBe(50);
    // the gate's timer (armed for 100) fires for nobody; the second waiter times out at 1000, not before
    await advanceTo(999);
    expect(second.error).toBeUndefined();
    await runUntil(scheduler, () => second.error !== undefined, 10_000);
    expect(second.at).toBe(1_000);
    expect(events.filter((e) => e.type === 'timed-out')).toHaveLength(1);
    expect(timersLeft()).toBe(0);
    await first.lease!.release();
  });

  it('leaves no timer once nobody waits locally: the waiters handed the lock, unsubscribed or timed out', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const a = observe(locker, 'k', 10_000);
    const b = observe(locker, 'k', 20_000);
    expect(timersLeft()).toBe(1); // one for the gate, not one per waiter
    b.sub!.unsubscribe();
    expect(timersLeft()).toBe(1);
    await holder.release();
    await runUntil(scheduler, () => a.lease !== undefined);
    expect(timersLeft()).toBe(0);
    const c = observe(locker, 'k', 5_000);
    expect(timersLeft()).toBe(1);
    await runUntil(scheduler, () => c.error !== undefined, 10_000);
    expect(c.at).toBe(scheduler.now());
    expect(timersLeft()).toBe(0);
    await a.lease!.release();
  });

  it('arms the timer once for waiters whose limits come in the order they joined (the common case: one waitTimeout)', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const schedule = vi.spyOn(scheduler, 'schedule');
    const waiters = [observe(locker, 'k', 1_000), observe(locker, 'k', 1_000), observe(locker, 'k', 1_000)];
    expect(schedule).toHaveBeenCalledTimes(1);
    schedule.mockRestore();
    await holder.release();
    await runUntil(scheduler, () => waiters[0]!.lease !== undefined);
    for (const w of waiters.slice(1)) w.sub!.unsubscribe();
    await waiters[0]!.lease!.release();
  });

  it('a waiter without a limit handed the lock does not take the timer of one with a limit behind it', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const forever = observe(locker, 'k', Infinity);
    const limited = observe(locker, 'k', 300);
    await advanceTo(10);
    await holder.release();
    await runUntil(scheduler, () => forever.lease !== undefined);
    await runUntil(scheduler, () => limited.error !== undefined, 10_000);
    expect(limited.at).toBe(300);
    await forever.lease!.release();
  });

  it('a waiter with a limit handed the lock leaves none behind, while one without a limit waits on', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const limited = observe(locker, 'k', 300);
    const forever = observe(locker, 'k', Infinity);
    expect(timersLeft()).toBe(1);
    await holder.release();
    await runUntil(scheduler, () => limited.lease !== undefined);
    expect(timersLeft()).toBe(0);
    await limited.lease!.release();
    await runUntil(scheduler, () => forever.lease !== undefined);
    await forever.lease!.release();
  });

  it('still times a local waiter out after the one ahead of it went to the store (it asked for another lease) and got the key', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const other = observe(locker, 'k', 10_000, 500_000); // another TTL: not passed locally, its own store session
    const behind = observe(locker, 'k', 500);
    await advanceTo(10);
    await holder.release();
    await runUntil(scheduler, () => other.lease !== undefined);
    await runUntil(scheduler, () => behind.error !== undefined, 10_000);
    expect(isLockTimeoutError(behind.error)).toBe(true);
    expect(behind.at).toBe(500);
    await other.lease!.release();
  });

  it('a waiter without a limit (waitTimeout Infinity) needs no timer; one with a limit beside it gets the only one', async () => {
    const locker = lockerOn();
    const holder = await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const forever = observe(locker, 'k', Infinity);
    expect(timersLeft()).toBe(0);
    const limited = observe(locker, 'k', 300);
    expect(timersLeft()).toBe(1);
    await runUntil(scheduler, () => limited.error !== undefined, 10_000);
    expect(limited.at).toBe(300);
    expect(timersLeft()).toBe(0);
    await holder.release();
    await runUntil(scheduler, () => forever.lease !== undefined);
    await forever.lease!.release();
  });

  it('closing the locker fails the local waiters and leaves no timer', async () => {
    const locker = lockerOn();
    await new Promise<Lease>((resolve) => locker.acquire('k').subscribe(resolve));
    const waiting = observe(locker, 'k', 10_000);
    expect(timersLeft()).toBe(1);
    await locker.close();
    expect(waiting.error).toBeDefined();
    expect(timersLeft()).toBe(0);
  });
});
