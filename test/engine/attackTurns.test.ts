/**
 * Attack on the turns of a store without a line (9166374): the sleep a locker takes before asking
 * again for a key it just gave back while others were after it. These hold: the sleep never
 * delays a `waitTimeout: 0` / `onBusy: 'skip'` answer, is cut to what is left of the wait (and a
 * last attempt is still made, at the deadline and not after), never happens with a retry
 * function, ends cleanly on unsubscribe and on `close()` (no store call, no timer left), and the
 * notes behind it stay bounded over many keys.
 *
 * In-memory store on a virtual clock. The give-back is made the way the store says (`waiting: 1`):
 * `poller` is refused the key, and `locker` gets it within 100 ms of that refusal and gives it back.
 */
import { defer, EMPTY, firstValueFrom, of, timer, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type Lease, type LockEvent, type Locker } from '../../src/index.js';
import { MAX_REFUSALS } from '../../src/backends/memory/RecentRefusals.js';
import { MAX_NOTED } from '../../src/engine/gate/RecentGiveBacks.js';
import { RecordingStore } from '../support/recordingStore.js';
import { settle, runVirtual } from '../support/virtualTime.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();

const lockers: Locker[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

interface Outcome {
  lease?: Lease;
  error?: unknown;
  completed?: boolean;
  /** Virtual ms from the subscription to the outcome. */
  at?: number;
  sub?: Subscription;
}

/** `locker` gave 'k' back at virtual time 0 while `poller` was after it (back-off: 10 ms, no jitter). */
async function afterGiveBack() {
  const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  const store = new RecordingStore(new MemoryLockStore({ clock: () => scheduler.now() }), () => scheduler.now());
  const make = () => createLocker({ store, scheduler, keyPrefix: '', longWait: Infinity, retry: { minDelay: 10, jitter: 0 } });
  const locker = make();
  const other = make();
  const poller = make();
  lockers.push(locker, other, poller);
  const held = await firstValueFrom(other.acquire('k', { renew: false }));
  await expect(firstValueFrom(poller.acquire('k', { waitTimeout: 0 }))).rejects.toSatisfy(isLockTimeoutError);
  await held.release();
  const lease = await firstValueFrom(locker.acquire('k', { renew: false }));
  await lease.release();
  const events: LockEvent[] = [];
  locker.events$.subscribe((event) => events.push(event));
  const callsBefore = store.calls.length;
  return {
    scheduler,
    store,
    locker,
    other,
    events,
    /** The store's tryAcquire calls since the give-back (anyone's). */
    tryAcquiresSince: () => store.calls.slice(callsBefore).filter((call) => call.op === 'tryAcquire'),
    watch(source: ReturnType<Locker['acquire']>): Outcome {
      const outcome: Outcome = {};
      const started = scheduler.now();
      outcome.sub = source.subscribe({
        next: (value) => ((outcome.lease = value as Lease), (outcome.at = scheduler.now() - started)),
        error: (error) => ((outcome.error = error), (outcome.at = scheduler.now() - started)),
        complete: () => ((outcome.completed = true), (outcome.at ??= scheduler.now() - started)),
      });
      return outcome;
    },
  };
}

describe("a store without a line: the sleep after a give-back (the locker's turn is over)", () => {
  it('sleeps one back-off step — but not with waitTimeout 0, onBusy skip or a retry function, and with a shorter wait only what is left of it, then a last attempt at the deadline', async () => {
    // The sleep itself: the next acquisition is granted after one back-off step, with only 'acquired'.
    let w = await afterGiveBack();
    let outcome = w.watch(w.locker.acquire('k'));
    await runVirtual(w.scheduler, () => outcome.lease !== undefined || outcome.error !== undefined, 1_000);
    expect(outcome.at).toBe(10);
    expect(w.events.map((event) => event.type)).toEqual(['acquired']);

    // waitTimeout 0, a free key: granted at once; a busy key: refused at once, one attempt, no timer left.
    w = await afterGiveBack();
    outcome = w.watch(w.locker.acquire('k', { waitTimeout: 0 }));
    await settle();
    expect(outcome.lease).toBeDefined();
    expect(outcome.at).toBe(0);
    w = await afterGiveBack();
    await firstValueFrom(w.other.acquire('k', { renew: false }));
    outcome = w.watch(w.locker.acquire('k', { waitTimeout: 0 }));
    await settle();
    expect(isLockTimeoutError(outcome.error)).toBe(true);
    expect(outcome.at).toBe(0);
    expect(w.scheduler.actions).toHaveLength(0);
    expect(w.events).toEqual([{ type: 'timed-out', key: 'k', waitedMs: 0, attempts: 1, skipped: false }]);
    // onBusy: 'skip' on the busy key: skipped at once, work not run.
    const ran: string[] = [];
    const work = defer(() => (ran.push('work'), of('work')));
    const skip = w.watch(work.pipe(w.locker.withLock('k', { onBusy: 'skip' })) as never);
    await settle();
    expect(skip.completed).toBe(true);
    expect(skip.at).toBe(0);
    expect(ran).toEqual([]);
    expect(w.scheduler.actions).toHaveLength(0);

    // A retry function decides when attempts are made: no sleep before the first.
    w = await afterGiveBack();
    outcome = w.watch(w.locker.acquire('k', { retry: () => timer(10, w.scheduler) }));
    await settle();
    expect(outcome.at).toBe(0);
    w = await afterGiveBack();
    outcome = w.watch(w.locker.acquire('k', { retry: () => EMPTY }));
    await settle();
    expect(outcome.at).toBe(0);

    // waitTimeout 5 < the back-off step (10): the sleep is cut to 5, and the last attempt is made
    // then — granted when the key is free, timed out at 5 (not later, one attempt) when it is not.
    w = await afterGiveBack();
    outcome = w.watch(w.locker.acquire('k', { waitTimeout: 5 }));
    await runVirtual(w.scheduler, () => outcome.lease !== undefined || outcome.error !== undefined, 1_000);
    expect(outcome.lease).toBeDefined();
    expect(outcome.at).toBe(5);
    w = await afterGiveBack();
    await firstValueFrom(w.other.acquire('k', { renew: false }));
    outcome = w.watch(w.locker.acquire('k', { waitTimeout: 5 }));
    await runVirtual(w.scheduler, () => outcome.lease !== undefined || outcome.error !== undefined, 1_000);
    expect(isLockTimeoutError(outcome.error)).toBe(true);
    expect(outcome.at).toBe(5);
    expect(w.tryAcquiresSince().map((call) => call.at)).toEqual([0, 5]); // the other's grant, then the last attempt
    expect(w.events).toEqual([{ type: 'timed-out', key: 'k', waitedMs: 5, attempts: 1, skipped: false }]);
    expect(w.scheduler.actions).toHaveLength(0);
  });

  it('an unsubscribe or close() during the sleep ends it: no store call, no timer left, no event but closed, the key free for others', async () => {
    let w = await afterGiveBack();
    let outcome = w.watch(w.locker.acquire('k'));
    w.scheduler.schedule(() => undefined, 5); // (to stop the clock mid-sleep)
    await runVirtual(w.scheduler, () => w.scheduler.now() >= 5, 5);
    expect(w.scheduler.now()).toBe(5);
    outcome.sub!.unsubscribe();
    await settle();
    expect(w.tryAcquiresSince()).toEqual([]);
    expect(w.scheduler.actions).toHaveLength(0);
    expect(w.events).toEqual([]);
    await expect(firstValueFrom(w.other.acquire('k', { waitTimeout: 0, renew: false }))).resolves.toBeDefined();

    w = await afterGiveBack();
    outcome = w.watch(w.locker.acquire('k'));
    w.scheduler.schedule(() => undefined, 5); // (to stop the clock mid-sleep)
    await runVirtual(w.scheduler, () => w.scheduler.now() >= 5, 5);
    await w.locker.close();
    expect(outcome.error).toMatchObject({ name: 'LockerClosedError' });
    expect(outcome.lease).toBeUndefined();
    expect(w.tryAcquiresSince()).toEqual([]);
    expect(w.scheduler.actions).toHaveLength(0);
    expect(w.events.map((event) => event.type)).toEqual(['closed']);
    await expect(firstValueFrom(w.other.acquire('k', { waitTimeout: 0, renew: false }))).resolves.toBeDefined();
  });

  it('the notes stay bounded: 10,000 keys, each refused to one locker and given back by another under contention', async () => {
    const store = new MemoryLockStore();
    const a = createLocker({ store });
    const b = createLocker({ store });
    lockers.push(a, b);
    for (let i = 0; i < 10_000; i++) {
      const key = `k${i}`;
      const held = await firstValueFrom(b.acquire(key));
      await firstValueFrom(a.acquire(key, { waitTimeout: 0 })).catch(() => undefined);
      await held.release();
      await (await firstValueFrom(a.acquire(key, { waitTimeout: 0 }))).release(); // a grant with waiting: 1, a noted give-back
      const again = await firstValueFrom(b.acquire(key, { waitTimeout: 0 }));
      await firstValueFrom(a.acquire(key, { waitTimeout: 0 })).catch(() => undefined); // a refusal left noted
      await again.release();
    }
    const refusals = (store as unknown as { refusals: { last: Map<string, unknown> } }).refusals.last.size;
    const giveBacks = (a as unknown as { gates: { giveBacks: { at: Map<string, number> } } }).gates.giveBacks.at.size;
    expect(refusals).toBeGreaterThan(0);
    expect(refusals).toBeLessThanOrEqual(MAX_REFUSALS);
    expect(giveBacks).toBeGreaterThan(0);
    expect(giveBacks).toBeLessThanOrEqual(MAX_NOTED);
    store.close();
  });
});
