/**
 * A {@link LeaseSet} over the leases a multi-key acquisition took (leases from the store, or holds
 * on leases of an enclosing stream: see ../reentrancy). States: `held` → `released` or `lost`.
 * The first loss of any lease loses the set; release gives back every lease once and never
 * rejects.
 */
import { checkExtendTtl } from '../../options/validate.js';
import type { GuardedLease } from '../lease/GuardedLease.js';
import { HoldLifecycle } from '../lease/HoldLifecycle.js';
import type { Lease } from '../lease/Lease.js';
import type { WorkLease } from '../lease/WorkLease.js';
import type { LeaseSet } from './LeaseSet.js';

export class HeldLeaseSet extends HoldLifecycle implements LeaseSet, GuardedLease {
  readonly keys: readonly string[];
  readonly leases: ReadonlyMap<string, Lease>;
  readonly fences: ReadonlyMap<string, number>;
  readonly acquiredAt = performance.now();

  /** `members`: one lease per key, in the order they were taken; the set watches their losses from now on. */
  constructor(private readonly members: readonly WorkLease[]) {
    super();
    this.keys = members.map((lease) => lease.key);
    this.leases = new Map(members.map((lease) => [lease.key, lease]));
    this.fences = new Map(members.map((lease) => [lease.key, lease.fence]));
    for (const lease of members) lease.watchLoss((error) => this.markLost(error));
  }

  get validUntil(): number {
    let until = Infinity;
    for (const lease of this.members) until = Math.min(until, lease.validUntil);
    return until;
  }

  get held(): boolean {
    return this.holding && this.members.every((lease) => lease.held);
  }

  /** The last key taken is given back first (each release never rejects: false when it failed). */
  protected giveBack(): Promise<boolean> {
    const releases = [...this.members].reverse().map((lease) => {
      lease.unwatchLoss();
      return lease.release();
    });
    return Promise.all(releases).then((outcomes) => outcomes.every(Boolean));
  }

  async extend(ttl?: number): Promise<boolean> {
    if (ttl !== undefined) checkExtendTtl(ttl);
    if (!this.holding) return false;
    const outcomes = await Promise.all(this.members.map((lease) => lease.extend(ttl)));
    return outcomes.every(Boolean);
  }
}
