/**
 * A locker's shared locks — counting semaphores and read-write locks — beside its mutexes: the
 * acquisitions as Observables ({@link SharedWait} does the waiting), their holders' leases, and
 * closing them with the locker. Built on the store's `SharedLockStore` capability
 * (../../store/SharedLockStore.ts); every holder is a store lease of its own, kept by a
 * {@link LeaseKeeper} (renewal, deadline, `LockLostError`, release once) through
 * {@link sharedLeaseView}, and reported on the locker's `events$` like a mutex's.
 *
 * No local gate: each acquisition has its own token and place in the store's line. A semaphore's
 * permits may pass from a local holder to a local waiter that asked for the same, without the store
 * and within the cohort policy's bounds ({@link PermitPasses}); read-write locks never pass. (A
 * reentrant read or write lock that joins an enclosing one never gets here: the locker hands it the
 * enclosing lease, see LockEngine's readWriteAcquisitionOf.)
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
import type { HandoffPolicy } from '../handoff/HandoffPolicy.js';
import type { StoreLease } from '../lease/StoreLease.js';
import { PermitPasses } from './PermitPasses.js';

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
  /** Semaphore permits passed on in-process. */
  private readonly passes: PermitPasses;
  /** Store leases between a holder that passed them on and the waiter that takes them. */
  private readonly passing = new Set<StoreLease>();
  private closing = false;

  constructor(
    store: LockStore & SharedLockStore,
    commandTimeout: number,
    private readonly clock: Clock,
    private readonly events: EventReporter,
    /** Reports waits that last (`long-wait` events). */
    private readonly longWaits: LongWaitWatch,
    /** Lock-delay is on (`store` adds it to every TTL): a lapsed holder's permits are not given back. */
    lockDelay: boolean,
    /** When a semaphore's permits may pass to a local waiter (the locker's cohort policy). */
    policy: HandoffPolicy,
  ) {
    this.passes = new PermitPasses(policy);
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

  /** What this locker keeps for passing permits on: turns of leases held, groups of waits (for tests). */
  get passState(): number {
    return this.passes.kept;
  }

  /**
   * One acquisition of `weight` permits out of `capacity` on `storeKey`: cold; emits the lease and
   * completes, or errors (`LockTimeoutError`, `LockStoreError`, `LockerClosedError`). Unsubscribing
   * before the lease is emitted gives back whatever the store granted anyway. `passable` (a
   * semaphore's permits): a local holder of the same may pass its own on to it, and permits it
   * gets may pass on to the next.
   */
  acquisition(key: string, storeKey: string, settings: AcquireSettings, weight: number, capacity: number, passable = false): Observable<WorkLease> {
    return new Observable<WorkLease>((subscriber) => {
      if (this.closing) {
        subscriber.error(new LockerClosedError(key));
        return;
      }
      const outcome = subscriberOutcome(subscriber);
      const wait: SharedWait = new SharedWait(this.ctx, key, storeKey, settings, weight, capacity, this.clock.now(), {
        granted: (grant) => {
          this.ended(wait);
          outcome.granted(this.hold(wait, grant, passable));
        },
        failed: (error) => {
          this.ended(wait);
          outcome.failed(error);
        },
        fences: () => this.passes.fencesFor(wait),
      });
      this.waits.add(wait);
      if (passable) this.passes.add({ wait, take: (storeLease, fence) => outcome.granted(this.holdPassed(wait, storeLease, fence)) });
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
    this.passes.forget(wait);
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

  /** A grant becomes a holder with a store lease of its own (and, `passable`, a turn to pass it on). */
  private hold(wait: SharedWait, grant: SharedGrant, passable: boolean): HeldLease {
    const { settings } = wait;
    const now = performance.now();
    const storeLease = this.leases.open(wait.key, wait.storeKey, wait.token, grant.ttl, grant.sentAt, settings.ttl, settings.renew);
    if (passable) this.passes.startTurn(wait, storeLease, grant.fence, grant.fences, grant.waiting, now);
    const holder = this.holderOf(storeLease, grant.fence, now);
    this.events.acquired(holder, this.clock.now() - wait.startedAt, wait.attempts, false);
    storeLease.start(now);
    return holder;
  }

  /** A local holder passed `storeLease`'s permits on to `wait`, with `fence`. */
  private holdPassed(wait: SharedWait, storeLease: StoreLease, fence: number): HeldLease {
    const holder = this.holderOf(storeLease, fence, performance.now());
    this.events.acquired(holder, this.clock.now() - wait.startedAt, wait.attempts, true);
    return holder;
  }

  /** The holder of `storeLease` now, told if it is lost. */
  private holderOf(storeLease: StoreLease, fence: number, now: number): HeldLease {
    const holder = new HeldLease(this, storeLease, fence, now);
    this.holders.add(holder);
    storeLease.onLost = (error) => {
      this.holders.delete(holder);
      this.passes.end(storeLease);
      holder.lose(error, () => this.events.lost(holder, error));
    };
    return holder;
  }

  releaseHolder(holder: HeldLease): Promise<boolean> {
    const storeLease = holder.store;
    this.holders.delete(holder);
    // Given back already (the locker closed), or lost: a quiet release, answered false.
    if (storeLease.givenBack) return Promise.resolve(false);
    const lost = !storeLease.isHeld;
    const now = performance.now();
    // (a lost lease, or one the closing locker gave back, is not valid: it does not pass)
    const fence = this.passes.decide(storeLease, now);
    if (fence !== undefined) {
      // Passed on: the store hears nothing now; its next answer about the lease (a renewal, the
      // last holder's release) confirms this hold (the `released` event waits for it). A loss
      // before the pass lands is nobody's to hear: the pass finds the lease no longer valid.
      storeLease.passed(holder, this.events.observed);
      storeLease.onLost = undefined;
      this.passing.add(storeLease);
      // (in a microtask, not inside this release() call: a chain of holders whose work ends
      // synchronously must not grow the stack)
      queueMicrotask(() => this.passOn(storeLease, fence));
      return Promise.resolve(true);
    }
    this.passes.end(storeLease);
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
   * The microtask of a pass: the oldest local waiter that asked for the same permits takes them —
   * if one still waits and the lease is still valid; else they go back to the store.
   */
  private passOn(storeLease: StoreLease, fence: number): void {
    if (!this.passing.delete(storeLease)) return; // the locker closed meanwhile
    const next = this.passes.nextFor(storeLease);
    if (next === undefined || !storeLease.valid(performance.now())) {
      this.passes.end(storeLease);
      this.giveBack(storeLease);
      return;
    }
    this.ended(next.wait);
    next.wait.passedOn();
    next.take(storeLease, fence);
  }

  /** Gives back a store lease nobody holds (a pass that found no taker, or the locker closing). */
  private giveBack(storeLease: StoreLease): void {
    storeLease.onLost = undefined;
    // (quiet when lost: its `lost` event told its story; else a failure is a `release-failed`)
    const released = new Promise<boolean>((resolve) => this.leases.release(storeLease, () => resolve(true), undefined, !storeLease.isHeld));
    this.releasing.add(released);
    void released.then(() => this.releasing.delete(released));
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
    for (const storeLease of [...this.passing]) {
      this.passing.delete(storeLease);
      this.passes.end(storeLease);
      this.giveBack(storeLease);
    }
    for (const holder of [...this.holders]) {
      this.holders.delete(holder);
      this.passes.end(holder.store);
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
