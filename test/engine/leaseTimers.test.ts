/**
 * The heap of lease timers keeps stale entries until they surface or a rebuild: those entries must
 * not keep their leases (and everything a lease points at) alive.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
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
