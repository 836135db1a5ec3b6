/**
 * A locker's shared locks — counting semaphores and read-write locks — beside its mutexes: the
 * acquisitions as Observables ({@link SharedWait} does the waiting), their holders' leases, and
 * closing them with the locker. Built on the store's `SharedLockStore` capability
 * (../../store/SharedLockStore.ts); every holder is a store lease of its own, kept by a
 * {@link LeaseKeeper} (renewal, deadline, `LockLostError`, release once) through
 * {@link sharedLeaseView}, and reported on the locker's `events$` like a mutex's.
 *
 * No local gate, no cohort hand-off: each acquisition has its own token and place in the store's
 * line, and its own fence. (A reentrant read or write lock that joins an enclosing one never gets
 * here: the locker hands it the enclosing lease, see LockEngine's readWriteAcquisitionOf.)
 */
import { Observable } from 'rxjs';
import { LockerClosedError, LockLostError } from '../../errors/errors.js';
import type { AcquireSettings } from '../../options/validate.js';
import { wakeUpOf } from '../../store/capabilities.js';
import type { LockStore } from '../../store/LockStore.js';
import { sharedInspectorOf, type SharedLockStore } from '../../store/SharedLockStore.js';
import { StoreAccess } from '../calls/StoreAccess.js';
import type { EventReporter } from '../events/EventReporter.js';
import { SharedInspector, type SharedLocalSide } from '../inspection/SharedInspector.js';
import { HeldLease, type HolderOwner } from '../lease/HeldLease.js';
import { LeaseKeeper } from '../lease/LeaseKeeper.js';
import type { WorkLease } from '../lease/WorkLease.js';
import { subscriberOutcome } from '../acquisition/subscriberOutcome.js';
import { ContentionMemory } from '../session/ContentionMemory.js';
import type { Clock } from '../timing/Clock.js';
import { sharedLeaseView } from './sharedLeaseView.js';
import { SharedWait, type SharedGrant, type SharedWaitContext } from './SharedWait.js';
import type { LongWaitWatch, WaitedKey } from '../events/LongWaitMonitor.js';

export class SharedLocks implements HolderOwner {
  /** Questions about this locker's store's shared locks that take nothing (`locker.inspectPermits` and kin). */
  readonly inspector: SharedInspector;
  private readonly ctx: SharedWaitContext;
  private readonly access: StoreAccess;
  private readonly leases: LeaseKeeper;
  private readonly waits = new Set<SharedWait>();
  private readonly holders = new Set<HeldLease>();
  /** Releases not answered yet (close() waits for them). */
  private readonly releasing = new Set<Promise<boolean>>();
  private closing = false;

  constructor(
    store: LockStore & SharedLockStore,
    commandTimeout: number,
    private readonly clock: Clock,
    private readonly events: EventReporter,
    /** Reports waits that last (`long-wait` events). */
    private readonly longWaits: LongWaitWatch,
    /** Lock-delay is on (`store` adds it to every TTL): a lapsed holder's permits are not given back. */
    lockDelay = false,
  ) {
    this.access = new StoreAccess(sharedLeaseView(store), commandTimeout);
    this.leases = new LeaseKeeper(this.access, events, lockDelay);
    this.ctx = { store, access: this.access, wakeUp: wakeUpOf(store), clock, events, contention: new ContentionMemory() };
    this.inspector = new SharedInspector({ access: this.access, store: sharedInspectorOf(store), clock, localSide: (storeKey) => this.localSide(storeKey) });
  }

  /** This locker's holders of and waits for the shared lock `storeKey`. */
  private localSide(storeKey: string): SharedLocalSide {
    const tokens = new Set<string>();
    for (const holder of this.holders) if (holder.store.storeKey === storeKey) tokens.add(holder.token);
    let waiting = 0;
    for (const wait of this.waits) if (wait.storeKey === storeKey) waiting++;
    return { tokens, waiting };
  }

  /** Holders of this locker's shared locks now (for tests). */
  get held(): number {
    return this.holders.size;
  }

  /**
   * One acquisition of `weight` permits out of `capacity` on `storeKey`: cold; emits the lease and
   * completes, or errors (`LockTimeoutError`, `LockStoreError`, `LockerClosedError`). Unsubscribing
   * before the lease is emitted gives back whatever the store granted anyway.
   */
  acquisition(key: string, storeKey: string, settings: AcquireSettings, weight: number, capacity: number): Observable<WorkLease> {
    return new Observable<WorkLease>((subscriber) => {
      if (this.closing) {
        subscriber.error(new LockerClosedError(key));
        return;
      }
      const outcome = subscriberOutcome(subscriber);
      const wait: SharedWait = new SharedWait(this.ctx, key, storeKey, settings, weight, capacity, this.clock.now(), {
        granted: (grant) => {
          this.ended(wait);
          outcome.granted(this.hold(wait, grant));
        },
        failed: (error) => {
          this.ended(wait);
          outcome.failed(error);
        },
      });
      this.waits.add(wait);
      this.longWaits.watch(this.waitedKey(key, storeKey, capacity, weight), wait);
      wait.start(this.ctx.contention.recent);
      return () => {
        if (this.waits.has(wait)) {
          this.ended(wait);
          wait.abandon();
        }
      };
    });
  }

  /** A wait is over (granted, failed or abandoned). */
  private ended(wait: SharedWait): void {
    this.waits.delete(wait);
    this.longWaits.forget(wait);
  }

  /** The shared lock a wait is for, as its long-wait reports tell it. */
  private waitedKey(key: string, storeKey: string, limit: number, weight: number): WaitedKey {
    const locks = this;
    return {
      key,
      storeKey,
      shared: { limit, weight },
      // (read when a report is due: one of this locker's own acquisitions holds permits then)
      get stateName() {
        return locks.localSide(storeKey).tokens.size > 0 ? 'held' : 'waiting';
      },
    };
  }

  /** A grant becomes a holder with a store lease of its own. */
  private hold(wait: SharedWait, grant: SharedGrant): HeldLease {
    const { settings } = wait;
    const now = performance.now();
    const storeLease = this.leases.open(wait.key, wait.storeKey, wait.token, grant.ttl, grant.sentAt, settings.ttl, settings.renew);
    const holder = new HeldLease(this, storeLease, grant.fence, now);
    this.holders.add(holder);
    storeLease.onLost = (error) => {
      this.holders.delete(holder);
      holder.lose(error, () => this.events.lost(holder, error));
    };
    this.events.acquired(holder, this.clock.now() - wait.startedAt, wait.attempts, false);
    storeLease.start(now);
    return holder;
  }

  releaseHolder(holder: HeldLease): Promise<boolean> {
    const storeLease = holder.store;
    this.holders.delete(holder);
    // Given back already (the locker closed), or lost: a quiet release, answered false.
    if (storeLease.givenBack) return Promise.resolve(false);
    const lost = !storeLease.isHeld;
    const now = performance.now();
    const releasing = new Promise<boolean>((resolve) => {
      this.leases.release(
        storeLease,
        (answer) => {
          if (!lost && typeof answer === 'boolean') this.events.released(holder, now, answer ? 'released' : 'gone');
          resolve(!lost && answer === true);
        },
        now,
        lost,
      );
    });
    this.releasing.add(releasing);
    void releasing.then(() => this.releasing.delete(releasing));
    return releasing;
  }

  /**
   * The locker is closing: waits fail with `LockerClosedError` (and leave the line), holders lose
   * their lease (`'locker-closed'`) and their permits are given back. Resolves once those releases
   * and every call in flight were answered, or `commandTimeout` passed.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const wait of [...this.waits]) {
      this.ended(wait);
      const error = new LockerClosedError(wait.key);
      this.events.closed(wait.key, error);
      wait.fail(error);
    }
    for (const holder of [...this.holders]) {
      this.holders.delete(holder);
      const storeLease = holder.store;
      storeLease.onLost = undefined;
      storeLease.abandon('locker-closed');
      const released = new Promise<boolean>((resolve) => this.leases.release(storeLease, (answer) => resolve(answer === true), undefined, true));
      this.releasing.add(released);
      const error = new LockLostError(holder.key, holder.token, 'locker-closed');
      holder.lose(error, () => this.events.lost(holder, error));
    }
    const drained = this.access.settledOrTimedOut();
    await Promise.all([...this.releasing, drained]);
    this.leases.stop();
  }
}
