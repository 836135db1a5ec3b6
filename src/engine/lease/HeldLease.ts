/**
 * A local holder's {@link Lease}: its own fence, release and loss, over the {@link StoreLease}
 * that keeps the key in the store (which it may share, in turn, with the local holders before and
 * after it). States: `held` → `released` or `lost`; release runs at most once and never rejects.
 */
import type { LockLostError } from '../../errors/errors.js';
import { checkExtendTtl } from '../../options/validate.js';
import type { HolderFacts } from '../events/EventReporter.js';
import { HoldLifecycle } from './HoldLifecycle.js';
import type { Lease } from './Lease.js';
import type { StoreLease } from './StoreLease.js';

/** Where a holder gives its lease back (its key's gate). */
export interface HolderOwner {
  releaseHolder(holder: HeldLease): Promise<boolean>;
}

export class HeldLease extends HoldLifecycle implements Lease, HolderFacts {
  constructor(
    private readonly owner: HolderOwner,
    readonly store: StoreLease,
    readonly fence: number,
    readonly acquiredAt: number,
  ) {
    super();
  }

  get key(): string {
    return this.store.key;
  }

  get token(): string {
    return this.store.token;
  }

  get id(): string {
    return `${this.store.token}:${this.fence}`;
  }

  get ttl(): number {
    return this.store.ttl;
  }

  get validUntil(): number {
    return this.store.validUntil;
  }

  get held(): boolean {
    return this.holding && this.store.valid(performance.now());
  }

  async extend(ttl?: number): Promise<boolean> {
    const newTtl = ttl === undefined ? this.store.renewTtl : checkExtendTtl(ttl);
    if (!this.holding) return false;
    return this.store.extend(newTtl);
  }

  /**
   * The store lease was lost while this holder had it. `report` (the `lost` event) runs once the
   * lease is lost and before anyone is told: an `events$` handler that releases the lease or ends
   * its stream then finds it lost, not held, and `lost$` subscribers still hear of the loss.
   */
  lose(error: LockLostError, report?: () => void): void {
    this.markLost(error, report);
  }

  protected giveBack(): Promise<boolean> {
    return this.owner.releaseHolder(this);
  }
}
