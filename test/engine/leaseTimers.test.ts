/**
 * The heap of lease timers keeps stale entries until they surface or a rebuild: those entries must
 * not keep their leases (and everything a lease points at) alive.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { LeaseTimers, type DueKind, type Scheduled, type TimerEntry } from '../../src/engine/lease/LeaseTimers.js';

class FakeLease implements Scheduled {
  timerEntry: TimerEntry | undefined = undefined;
  readonly fired: DueKind[] = [];
  due(kind: DueKind): void {
    this.fired.push(kind);
  }
}

describe('LeaseTimers: a stale entry holds nothing', () => {
  it('rescheduling or cancelling lets the old entry go of its lease; the live entry still fires', async () => {
    const timers = new LeaseTimers(() => undefined);
    const lease = new FakeLease();
    timers.schedule(lease, 'renew', performance.now() + 60_000);
    const first = lease.timerEntry!;
    expect(first.lease).toBe(lease);
    timers.schedule(lease, 'deadline', performance.now() + 5);
    expect(first.lease).toBeUndefined();
    const second = lease.timerEntry!;
    expect(second.lease).toBe(lease);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(lease.fired).toEqual(['deadline']);
    expect(lease.timerEntry).toBeUndefined();
    expect(second.lease).toBeUndefined();

    const other = new FakeLease();
    timers.schedule(other, 'renew', performance.now() + 60_000);
    const entry = other.timerEntry!;
    timers.cancel(other);
    expect(entry.lease).toBeUndefined();
    expect(other.timerEntry).toBeUndefined();
    timers.stop();
  });

  it('leases cancelled while their entries wait in the heap are garbage', async () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const timers = new LeaseTimers(() => undefined);
    // One lease stays held: the heap is never emptied, and every stale entry stays in it.
    const held = new FakeLease();
    timers.schedule(held, 'renew', performance.now() + 120_000);
    const refs = ((): Array<WeakRef<FakeLease>> => {
      const out: Array<WeakRef<FakeLease>> = [];
      // Fewer than a rebuild needs: every stale entry stays in the heap.
      for (let i = 0; i < 500; i++) {
        const lease = new FakeLease();
        timers.schedule(lease, 'renew', performance.now() + 60_000 + i);
        timers.cancel(lease);
        out.push(new WeakRef(lease));
      }
      return out;
    })();
    expect(timers.size).toBe(501);
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBe(0);
    timers.stop();
  });

  it('cancelling the last live lease empties the heap at once (no stale entries carried to a rebuild)', () => {
    const timers = new LeaseTimers(() => undefined);
    for (let i = 0; i < 50; i++) {
      const lease = new FakeLease();
      timers.schedule(lease, 'renew', performance.now() + 60_000 + i);
      timers.schedule(lease, 'deadline', performance.now() + 90_000 + i); // leaves a stale entry
      timers.cancel(lease);
      expect(timers.size).toBe(0);
    }
    const a = new FakeLease();
    const b = new FakeLease();
    timers.schedule(a, 'renew', performance.now() + 60_000);
    timers.schedule(b, 'renew', performance.now() + 60_001);
    timers.cancel(a);
    expect(timers.size).toBe(2); // b is still live: a's entry stays, stale, until it surfaces or a rebuild
    timers.cancel(b);
    expect(timers.size).toBe(0);
    timers.stop();
  });
});

describe('LeaseTimers: order and pace (mutation run of the lease clock)', () => {
  it('fires each entry at its own time, earliest first, whatever order they were scheduled in', async () => {
    // A heap ordered wrongly (its comparator broken) keeps a later entry on top: the timer fires
    // for the earliest, finds the top not due, and a lease's deadline is missed until the later
    // one's — a lease believed valid past the moment its key may have expired.
    const timers = new LeaseTimers(() => undefined);
    const late = new FakeLease();
    const early = new FakeLease();
    const middle = new FakeLease();
    const t0 = performance.now();
    timers.schedule(late, 'deadline', t0 + 3_000);
    timers.schedule(early, 'deadline', t0 + 100);
    timers.schedule(middle, 'deadline', t0 + 1_200);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(early.fired).toEqual(['deadline']);
    expect(middle.fired).toEqual([]);
    expect(late.fired).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(middle.fired).toEqual(['deadline']);
    expect(late.fired).toEqual([]);
    timers.stop();
  });

  it('sleeps until the head is due: no timer spins while nothing is due', async () => {
    // (a delay of 0 instead of "until the head is due" re-fired the timer in a loop)
    const timers = new LeaseTimers(() => undefined);
    const lease = new FakeLease();
    const spy = vi.spyOn(globalThis, 'setTimeout');
    try {
      timers.schedule(lease, 'renew', performance.now() + 60_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // the one arming, and the test's own sleep
      expect(spy.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      spy.mockRestore();
      timers.stop();
    }
  });

  it('a stopped clock fires nothing, not even for entries scheduled after it stopped', async () => {
    const timers = new LeaseTimers(() => undefined);
    const before = new FakeLease();
    timers.schedule(before, 'deadline', performance.now() + 50);
    timers.stop();
    const after = new FakeLease();
    timers.schedule(after, 'deadline', performance.now() + 50);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(before.fired).toEqual([]);
    expect(after.fired).toEqual([]);
  });

  it.each([
    ['with another lease held', true],
    ['alone', false],
  ])('a stale entry that surfaces is counted out: cancelling a lease later never drops live entries (%s)', async (_, withB) => {
    // (the count of stale entries decides when the heap is emptied at once: counted wrongly, the
    // cancel of one lease cleared the others' live entries, and their deadlines never fired)
    const timers = new LeaseTimers(() => undefined);
    const a = new FakeLease();
    const b = new FakeLease();
    const t0 = performance.now();
    timers.schedule(a, 'deadline', t0 + 50);
    timers.schedule(a, 'deadline', t0 + 900); // the entry at +50 is stale now
    if (withB) timers.schedule(b, 'renew', t0 + 60_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // it surfaced and was dropped
    const c = new FakeLease();
    timers.schedule(c, 'renew', t0 + 100_000);
    timers.cancel(c);
    expect(timers.size).toBe(withB ? 3 : 2);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(a.fired).toEqual(['deadline']);
    if (withB) expect(b.timerEntry?.lease).toBe(b);
    timers.stop();
  });

  it('keeps the heap bounded by the leases held: stale entries are dropped once they outnumber the live ones', () => {
    const timers = new LeaseTimers(() => undefined);
    const held = new FakeLease();
    timers.schedule(held, 'renew', performance.now() + 120_000);
    const t0 = performance.now();
    for (let i = 0; i < 5_000; i++) {
      const lease = new FakeLease();
      timers.schedule(lease, 'renew', t0 + 60_000 + i);
      timers.cancel(lease);
    }
    // (a rebuild needs 1024 stale entries and more stale than live: never much above that)
    expect(timers.size).toBeLessThanOrEqual(1_100);
    expect(held.timerEntry?.lease).toBe(held);
    timers.stop();
  });
});
