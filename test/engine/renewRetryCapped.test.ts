/**
 * A renewal that fails while the deadline is held down by a shorter call than the lease's TTL:
 * the retry must fit in what is left of that deadline, not in a third of the TTL's interval.
 */
import { describe, expect, it } from 'vitest';
import { LockStoreError } from '../../src/errors/errors.js';
import type { DueKind } from '../../src/engine/lease/LeaseTimers.js';
import { StoreLease, type StoreLeaseOwner } from '../../src/engine/lease/StoreLease.js';
import type { ExtendOutcome } from '../../src/store/LockStore.js';

class Keeper implements StoreLeaseOwner {
  entry: { kind: DueKind; dueAt: number } | undefined;
  async extendLease(): Promise<ExtendOutcome> {
    return 'extended';
  }
  schedule(_lease: StoreLease, kind: DueKind, dueAt: number): void {
    this.entry = { kind, dueAt };
  }
  unschedule(): void {
    this.entry = undefined;
  }
  renewed(): void {}
  renewFailed(): void {}
  passesSettled(): void {}
}

describe('a renewal failure while a shorter call caps the deadline', () => {
  it('extend(3000) answered while a renewal to the old 100 ms TTL is out; that renewal fails: a retry is scheduled before the deadline', () => {
    // (The renewal may have run after the extend, so the deadline stays at what its 100 ms leave:
    // ~95 ms. The retry was spaced by a third of the 3000 ms TTL's interval (333 ms), fell past
    // that deadline, and the deadline replaced the renewal the extend's answer had scheduled: the
    // lease was lost as 'store-unreachable' although the store answered the extend.)
    const keeper = new Keeper();
    const t0 = performance.now();
    const lease = new StoreLease(keeper, 'k', 'k', 't', 100, t0, 100, { interval: undefined });
    const extendSent = performance.now();
    const renewalSent = extendSent + 0.01;
    lease.renewing(renewalSent);
    expect(lease.extended('extended', extendSent, 3000, true)).toBe(true);
    expect(keeper.entry?.kind).toBe('renew');
    lease.renewFailed(new LockStoreError('k', 'extend', 'connection reset'), renewalSent);
    expect(lease.isHeld).toBe(true);
    expect(lease.validUntil).toBeLessThan(renewalSent + 100);
    expect(keeper.entry?.kind).toBe('renew');
    expect(keeper.entry!.dueAt).toBeLessThan(lease.validUntil);
  });
});
