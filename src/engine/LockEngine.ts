/**
 * The lock engine behind a {@link Locker}: a façade that wires the parts and routes each
 * acquisition to its key's gate. The parts, each in its own folder with one job:
 * - gate/: each key's local line and holder, as a state machine (KeyGate, GateState);
 * - session/: the store side of a wait (attempts, back-off, the store's line, wake-up);
 * - handoff/: when the lock may pass locally without the store (the cohort policy);
 * - fencing/: where each holder's fencing token comes from;
 * - lease/: held leases: renewal, deadlines, loss, release;
 * - events/: what `events$` reports;
 * - calls/: store calls bounded by `commandTimeout`, and the store's capabilities;
 * - acquisition/: an acquisition as an Observable, and the work run while a lease is held.
 */
import { catchError, EMPTY, map, Observable, throwError, type MonoTypeOperatorFunction } from 'rxjs';
import { isLockTimeoutError, LockCapabilityError, LockOptionsError, LockUpgradeError } from '../errors/errors.js';
import type { AcquireOptions, LockOperatorOptions } from '../options/LockerOptions.js';
import type { AcquirePermitOptions, AcquireReadWriteOptions, PermitOptions, ReadWriteLockOptions } from '../options/PermitOptions.js';
import { resolvePermitOptions } from '../options/validatePermits.js';
import { sharedOf } from '../store/SharedLockStore.js';
import { resolveAcquireOptions, resolveOperatorOptions, validateKey, validateKeys, type AcquireSettings, type LockerSettings } from '../options/validate.js';
import { closerOf } from '../store/capabilities.js';
import { acquisition, type AcquisitionContext, type WaitingLine } from './acquisition/acquisition.js';
import { runWhileHeld, type WorkScope } from './acquisition/whileHeld.js';
import { withWorkSignal, type LockedWork } from './acquisition/workSignal.js';
import { lockDelayed } from './calls/lockDelayedStore.js';
import { StoreAccess } from './calls/StoreAccess.js';
import type { LockEvent } from './events/events.js';
import { EventReporter } from './events/EventReporter.js';
import { LongWaitMonitor } from './events/LongWaitMonitor.js';
import { GateRegistry } from './gate/GateRegistry.js';
import { CohortPolicy, NO_HANDOFF, type HandoffPolicy } from './handoff/HandoffPolicy.js';
import { KeyInspector, type LockerLockInfo, type WaitUntilFreeOptions } from './inspection/KeyInspector.js';
import type { HolderKind, LockerPermitsInfo, WaitUntilPermitsFreeOptions } from './inspection/SharedInspector.js';
import type { HeldLease } from './lease/HeldLease.js';
import type { WorkLease } from './lease/WorkLease.js';
import type { Lease } from './lease/Lease.js';
import { LeaseKeeper } from './lease/LeaseKeeper.js';
import type { LockedSetWork, Locker } from './Locker.js';
import { HeldLeaseSet } from './multikey/HeldLeaseSet.js';
import type { LeaseSet } from './multikey/LeaseSet.js';
import { inLockOrder } from './multikey/lockOrder.js';
import { setAcquisition, type TakenKey } from './multikey/setAcquisition.js';
import { currentFrame, enclosingHold, runHolding, runHoldingAll, runInFrame } from './reentrancy/enclosingHolds.js';
import { HoldLease, SharedHold, type HoldMode } from './reentrancy/SharedHold.js';
import { ContentionMemory } from './session/ContentionMemory.js';
import { READ_PERMITS, READ_WRITE_CAPACITY, WRITE_PERMITS } from './shared/readWrite.js';
import { SharedLocks } from './shared/SharedLocks.js';
import { Clock } from './timing/Clock.js';

/** The options `waitUntilFree` accepts. */
const WAIT_KEYS: readonly string[] = ['waitTimeout', 'retry'];

/** How the engine is put together beyond the validated settings. */
export interface EngineParts {
  /** The engine made its store (the default in-memory one): close() closes it. */
  readonly ownsStore?: boolean;
  /** Replaces the cohort policy built from `settings.cohort`. */
  readonly handoff?: HandoffPolicy;
}

export class LockEngine implements Locker, AcquisitionContext {
  private readonly keyPrefix: string;
  /**
   * The last key asked for (valid) and its store key: a key used again and again gets the same
   * string, not a new concatenation that the gate registry and the store then compare and hash
   * anew (and its check of well-formedness is not run again).
   */
  private lastKey: string | undefined;
  private lastStoreKey = '';
  private readonly defaults: AcquireSettings;
  private readonly clock: Clock;
  private readonly access: StoreAccess;
  private readonly reporter = new EventReporter();
  private readonly leases: LeaseKeeper;
  private readonly gates: GateRegistry;
  private readonly inspector: KeyInspector;
  private readonly longWaits: LongWaitMonitor;
  /** Semaphores and read-write locks, when the store has shared locks. */
  private readonly shared: SharedLocks | undefined;
  private readonly ownsStore: boolean;
  private closing: Promise<void> | undefined;
  private closeCalled = false;
  readonly events$: Observable<LockEvent> = this.reporter.events$;

  constructor(settings: LockerSettings, parts: EngineParts = {}) {
    this.keyPrefix = settings.keyPrefix;
    this.defaults = settings;
    this.ownsStore = parts.ownsStore === true;
    const clock = (this.clock = new Clock(settings.scheduler, settings.random));
    // Lock-delay: the store sees TTLs longer than the leases' (see ./calls/lockDelayedStore.ts).
    const store = settings.lockDelay > 0 ? lockDelayed(settings.store, settings.lockDelay) : settings.store;
    const access = (this.access = new StoreAccess(store, settings.commandTimeout));
    const leases = (this.leases = new LeaseKeeper(access, this.reporter, settings.lockDelay > 0));
    const longWaits = (this.longWaits = new LongWaitMonitor(access, clock, this.reporter, settings.longWait));
    const policy = parts.handoff ?? (settings.cohort.maxPasses > 0 ? new CohortPolicy(settings.cohort) : NO_HANDOFF);
    this.gates = new GateRegistry(
      {
        clock,
        leases,
        policy,
        events: this.reporter,
        longWaits,
        defaults: settings,
        sessions: {
          access,
          clock,
          contention: new ContentionMemory(),
          giveBack: (key, storeKey, token, unsure) => leases.releaseAbandoned(key, storeKey, token, unsure),
        },
      },
      settings.localGate,
    );
    const gates = this.gates;
    const sharedStore = sharedOf(store);
    this.shared =
      sharedStore === undefined
        ? undefined
        : new SharedLocks(
            sharedStore,
            settings.commandTimeout,
            clock,
            this.reporter,
            longWaits,
            settings.lockDelay > 0,
            settings.localGate ? policy : NO_HANDOFF,
          );
    this.inspector = new KeyInspector({ access, clock, localSide: (storeKey) => gates.localSide(storeKey) });
  }

  // ─── Locker ──────────────────────────────────────────────────────────────────────────────────

  acquire(key: string, options?: AcquireOptions): Observable<Lease> {
    return this.acquisitionOf(key, this.settingsOf(options));
  }

  withLock<T>(key: string, options?: LockOperatorOptions): MonoTypeOperatorFunction<T> {
    const settings = resolveOperatorOptions(options, this.defaults);
    const lease$ = this.operatorAcquisitionOf(key, settings);
    const scope = this.workScope(key, settings);
    return (source) => runWhileHeld(lease$, () => source, settings.onLost, scope);
  }

  using<R>(key: string, work: LockedWork<R>, options?: LockOperatorOptions): Observable<R> {
    const settings = resolveOperatorOptions(options, this.defaults);
    const lease$ = this.operatorAcquisitionOf(key, settings);
    return runWhileHeld(lease$, (lease) => withWorkSignal(lease, work), settings.onLost, this.workScope(key, settings));
  }

  withPermit<T>(key: string, options: PermitOptions): MonoTypeOperatorFunction<T> {
    const { settings, weight, capacity } = resolvePermitOptions(options, this.defaults, true);
    const lease$ = this.sharedAcquisitionOf(key, settings, weight, capacity, true);
    return (source) => runWhileHeld(lease$, () => source, settings.onLost, this.plainScope());
  }

  usingPermit<R>(key: string, work: LockedWork<R>, options: PermitOptions): Observable<R> {
    const { settings, weight, capacity } = resolvePermitOptions(options, this.defaults, true);
    return runWhileHeld(
      this.sharedAcquisitionOf(key, settings, weight, capacity, true),
      (lease) => withWorkSignal(lease, work),
      settings.onLost,
      this.plainScope(),
    );
  }

  acquirePermit(key: string, options: AcquirePermitOptions): Observable<Lease> {
    const { settings, weight, capacity } = resolvePermitOptions(options, this.defaults, false);
    return this.sharedAcquisitionOf(key, settings, weight, capacity, true);
  }

  withReadLock<T>(key: string, options?: ReadWriteLockOptions): MonoTypeOperatorFunction<T> {
    return this.readWriteOperator(key, options, READ_PERMITS);
  }

  withWriteLock<T>(key: string, options?: ReadWriteLockOptions): MonoTypeOperatorFunction<T> {
    return this.readWriteOperator(key, options, WRITE_PERMITS);
  }

  usingReadLock<R>(key: string, work: LockedWork<R>, options?: ReadWriteLockOptions): Observable<R> {
    return this.readWriteUsing(key, work, options, READ_PERMITS);
  }

  usingWriteLock<R>(key: string, work: LockedWork<R>, options?: ReadWriteLockOptions): Observable<R> {
    return this.readWriteUsing(key, work, options, WRITE_PERMITS);
  }

  acquireReadLock(key: string, options?: AcquireReadWriteOptions): Observable<Lease> {
    return this.readWriteAcquisitionOf(key, resolveAcquireOptions(options, this.defaults), READ_PERMITS);
  }

  acquireWriteLock(key: string, options?: AcquireReadWriteOptions): Observable<Lease> {
    return this.readWriteAcquisitionOf(key, resolveAcquireOptions(options, this.defaults), WRITE_PERMITS);
  }

  withLocks<T>(keys: readonly string[], options?: LockOperatorOptions): MonoTypeOperatorFunction<T> {
    const settings = resolveOperatorOptions(options, this.defaults);
    const taken$ = this.operatorSkips(this.setAcquisitionOf(keys, settings), settings);
    const scope = this.setScope(settings);
    return (source) => runWhileHeld(taken$, () => source, settings.onLost, scope);
  }

  usingLocks<R>(keys: readonly string[], work: LockedSetWork<R>, options?: LockOperatorOptions): Observable<R> {
    const settings = resolveOperatorOptions(options, this.defaults);
    const taken$ = this.operatorSkips(this.setAcquisitionOf(keys, settings), settings);
    return runWhileHeld(taken$, (locks: HeldLeaseSet) => withWorkSignal(locks, work), settings.onLost, this.setScope(settings));
  }

  acquireLocks(keys: readonly string[], options?: AcquireOptions): Observable<LeaseSet> {
    return this.setAcquisitionOf(keys, this.settingsOf(options)).pipe(map((taken) => new HeldLeaseSet(taken.map(({ lease }) => lease))));
  }

  isLocked(key: string): Observable<boolean> {
    return this.inspector.isLocked(key, this.storeKeyOf(key));
  }

  inspect(key: string): Observable<LockerLockInfo | null> {
    return this.inspector.inspect(key, this.storeKeyOf(key));
  }

  waitUntilFree(key: string, options?: WaitUntilFreeOptions): Observable<void> {
    const storeKey = this.storeKeyOf(key);
    const settings = resolveAcquireOptions(options, this.defaults, WAIT_KEYS, 'waitUntilFree options');
    return this.inspector.waitUntilFree(key, storeKey, settings);
  }

  inspectPermits(key: string): Observable<LockerPermitsInfo | null> {
    const storeKey = this.storeKeyOf(key);
    const shared = this.shared;
    return shared === undefined ? throwError(() => new LockCapabilityError(key, 'shared')) : shared.inspector.inspect(key, storeKey);
  }

  isReadLocked(key: string): Observable<boolean> {
    return this.sharedHeld(key, 'reader');
  }

  isWriteLocked(key: string): Observable<boolean> {
    return this.sharedHeld(key, 'writer');
  }

  waitUntilPermitsFree(key: string, options?: WaitUntilPermitsFreeOptions): Observable<void> {
    const storeKey = this.storeKeyOf(key);
    // (`until` is checked here; the rest as waitUntilFree's options, a non-object refused by that check)
    const isObject = typeof options === 'object' && options !== null;
    const { until, ...rest } = isObject ? options : {};
    if (until !== undefined && until !== 'no-holder' && until !== 'no-writer') throw new LockOptionsError('until', "'no-holder' or 'no-writer'", until);
    const settings = resolveAcquireOptions(isObject ? rest : options, this.defaults, WAIT_KEYS, 'waitUntilPermitsFree options');
    const shared = this.shared;
    if (shared === undefined) return throwError(() => new LockCapabilityError(key, 'shared'));
    return shared.inspector.waitUntilFree(key, storeKey, settings, until === 'no-writer' ? 'writer' : 'any');
  }

  get closed(): boolean {
    return this.closeCalled;
  }

  close(): Promise<void> {
    // Closed before shutDown() starts: the streams it stops hear of it synchronously, and one that
    // resubscribes at once (retry()) must be refused, not take a lock behind the closing gates.
    this.closeCalled = true;
    return (this.closing ??= this.shutDown());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ─── AcquisitionContext ──────────────────────────────────────────────────────────────────────

  now(): number {
    return this.clock.now();
  }

  lineFor(key: string, storeKey: string): WaitingLine {
    return this.gates.gateFor(key, storeKey);
  }

  enclosingHold(storeKey: string): SharedHold | undefined {
    return enclosingHold(currentFrame(), this, storeKey);
  }

  // ─── for tests ───────────────────────────────────────────────────────────────────────────────

  /** Keys with a local gate right now (holders, waiters or releases in flight). */
  get liveKeys(): number {
    return this.gates.size;
  }

  /** Entries in the renewal heap, live and stale. */
  get scheduledRenewals(): number {
    return this.leases.scheduled;
  }

  // ─── internals ───────────────────────────────────────────────────────────────────────────────

  private settingsOf(options: AcquireOptions | undefined): AcquireSettings {
    return resolveAcquireOptions(options, this.defaults);
  }

  private operatorAcquisitionOf(key: string, settings: AcquireSettings): Observable<WorkLease> {
    return this.operatorSkips(this.acquisitionOf(key, settings), settings);
  }

  /** With `onBusy: 'skip'`, a busy lock (the one attempt timed out) completes empty instead. */
  private operatorSkips<G>(granted$: Observable<G>, settings: AcquireSettings): Observable<G> {
    if (settings.skip !== true) return granted$;
    return granted$.pipe(catchError((error: unknown) => (isLockTimeoutError(error) ? EMPTY : throwError(() => error))));
  }

  /**
   * Every key of `keys`, in lock order (see ./multikey), one wait limit for the set. Throws
   * `LockOptionsError` at once for a bad array (`keys`) or key (`keys[i]`, or the store's refusal).
   */
  private setAcquisitionOf(keys: readonly string[], settings: AcquireSettings): Observable<readonly TakenKey[]> {
    validateKeys(keys);
    const ordered = inLockOrder(keys, (key) => this.storeKeyOf(key));
    return setAcquisition(
      ordered,
      ({ key, storeKey }, startedAt) => acquisition(this, key, storeKey, settings, startedAt),
      () => this.clock.now(),
    );
  }

  private readWriteOperator<T>(key: string, options: ReadWriteLockOptions | undefined, weight: number): MonoTypeOperatorFunction<T> {
    const settings = resolveOperatorOptions(options, this.defaults);
    const lease$ = this.readWriteAcquisitionOf(key, settings, weight);
    return (source) => runWhileHeld(lease$, () => source, settings.onLost, this.workScope(key, settings, readWriteMode(weight)));
  }

  private readWriteUsing<R>(key: string, work: LockedWork<R>, options: ReadWriteLockOptions | undefined, weight: number): Observable<R> {
    const settings = resolveOperatorOptions(options, this.defaults);
    return runWhileHeld(
      this.readWriteAcquisitionOf(key, settings, weight),
      (lease) => withWorkSignal(lease, work),
      settings.onLost,
      this.workScope(key, settings, readWriteMode(weight)),
    );
  }

  /**
   * A read (`weight` {@link READ_PERMITS}) or write lock acquisition. With `reentrant`, one
   * subscribed inside the work of a read-write lock of the same key that covers it — a read or
   * write lock for a read, a write lock for a write — joins that lease instead (see
   * ../reentrancy); a write inside a read lock that no write lock encloses errors at once with
   * `LockUpgradeError` (it would wait for itself).
   */
  private readWriteAcquisitionOf(key: string, settings: AcquireSettings, weight: number): Observable<WorkLease> {
    const lease$ = this.sharedAcquisitionOf(key, settings, weight, READ_WRITE_CAPACITY);
    if (settings.reentrant !== true) return lease$;
    const storeKey = this.keyPrefix + key;
    const write = weight === WRITE_PERMITS;
    return new Observable<WorkLease>((subscriber) => {
      // (after close() nothing joins: closing abandons every shared holder at once, so no hold is
      // live, and lease$ errors with LockerClosedError)
      const frame = currentFrame();
      const outer = enclosingHold(frame, this, storeKey, write ? COVERS_WRITE : COVERS_READ);
      if (outer !== undefined) {
        subscriber.next(outer.join());
        subscriber.complete();
        return undefined;
      }
      if (write && enclosingHold(frame, this, storeKey, READ_ONLY) !== undefined) {
        subscriber.error(new LockUpgradeError(key));
        return undefined;
      }
      return lease$.subscribe(subscriber);
    });
  }

  /** Does a holder of `kind` hold the shared lock `key`? */
  private sharedHeld(key: string, kind: HolderKind): Observable<boolean> {
    const storeKey = this.storeKeyOf(key);
    const shared = this.shared;
    return shared === undefined ? throwError(() => new LockCapabilityError(key, 'shared')) : shared.inspector.isHeld(key, storeKey, kind);
  }

  /**
   * A shared acquisition (semaphore permits, `permits` true, or a read or write lock); with
   * `onBusy: 'skip'`, a busy lock completes empty. A store without shared locks errors it with
   * `LockCapabilityError`.
   */
  private sharedAcquisitionOf(key: string, settings: AcquireSettings, weight: number, capacity: number, permits = false): Observable<WorkLease> {
    const storeKey = this.storeKeyOf(key);
    const shared = this.shared;
    if (shared === undefined) return throwError(() => new LockCapabilityError(key, 'shared'));
    const lease$ = shared.acquisition(key, storeKey, settings, weight, capacity, permits);
    if (settings.skip !== true) return lease$;
    return lease$.pipe(catchError((error: unknown) => (isLockTimeoutError(error) ? EMPTY : throwError(() => error))));
  }

  private acquisitionOf(key: string, settings: AcquireSettings): Observable<WorkLease> {
    return acquisition(this, key, this.storeKeyOf(key), settings);
  }

  /** The key as the store knows it; throws `LockOptionsError` for a key the locker or store refuses. */
  private storeKeyOf(key: string): string {
    let storeKey: string;
    if (this.lastKey !== undefined && key === this.lastKey) storeKey = this.lastStoreKey;
    else {
      storeKey = this.keyPrefix + validateKey(key);
      this.lastKey = key;
      this.lastStoreKey = storeKey;
    }
    this.access.keyCheck?.checkKey(storeKey);
    return storeKey;
  }

  /**
   * Reentrancy (see ./reentrancy): the work runs in the frames of the code that subscribed to the
   * stream — captured at subscription, not where the grant arrives (a callback of whoever made the
   * store call or passed the lock) — with, on top, the lease it took from the store, which streams
   * nested in the work then join. A stream that joined an enclosing hold adds no frame (the hold is
   * in the frames already); without `reentrant: true` it adds none either, so nothing joins it.
   * `mode`: what the lease is (a mutex's, a read or write lock's), which decides who may join it.
   */
  private workScope(key: string, settings: AcquireSettings, mode: HoldMode = 'mutex'): WorkScope<WorkLease, WorkLease> {
    const storeKey = this.keyPrefix + key;
    const reentrant = settings.reentrant === true;
    return () => {
      const parent = currentFrame();
      return (lease, start) => {
        if (!reentrant || lease instanceof HoldLease) return runInFrame(parent, () => start(lease));
        const shared = new SharedHold(lease as HeldLease, this, storeKey, mode);
        return runHolding(shared, parent, () => start(shared.outermost()));
      };
    };
  }

  /**
   * The scope of a semaphore's work (never reentrant): the work runs in the frames of the code
   * that subscribed, as a non-reentrant lock's does (see workScope).
   */
  private plainScope(): WorkScope<WorkLease, WorkLease> {
    return () => {
      const parent = currentFrame();
      return (lease, start) => runInFrame(parent, () => start(lease));
    };
  }

  /**
   * {@link LockEngine.workScope} for a set: the work runs in the subscriber's frames with, on top,
   * one hold per key the set took from the store (keys it joined are in the frames already), so a
   * stream nested in the work joins any key of the set.
   */
  private setScope(settings: AcquireSettings): WorkScope<readonly TakenKey[], HeldLeaseSet> {
    const reentrant = settings.reentrant === true;
    return () => {
      const parent = currentFrame();
      return (taken, start) => {
        if (!reentrant) return runInFrame(parent, () => start(new HeldLeaseSet(taken.map(({ lease }) => lease))));
        const shared: SharedHold[] = [];
        const leases = taken.map(({ lease, storeKey }) => {
          if (lease instanceof HoldLease) return lease;
          const hold = new SharedHold(lease as HeldLease, this, storeKey);
          shared.push(hold);
          return hold.outermost();
        });
        return runHoldingAll(shared, parent, () => start(new HeldLeaseSet(leases)));
      };
    };
  }

  private async shutDown(): Promise<void> {
    try {
      // Calls in flight now and the calls closing the gates starts (releases, waiters leaving the
      // line) end within commandTimeout: one limit, counted from here, covers them all. (Counted
      // before the gates close, a leave sent by a waiter with nothing in flight was not waited for.)
      const gatesClosed = this.gates.close();
      const sharedClosed = this.shared?.close();
      const drained = this.access.settledOrTimedOut();
      await gatesClosed;
      await sharedClosed;
      await drained;
      this.leases.stop();
      this.longWaits.stop();
      if (this.ownsStore) await closerOf(this.access.store)?.close();
    } catch {
      // close() never rejects: a store that fails to close has nothing left of ours to give back.
    } finally {
      this.reporter.complete();
    }
  }
}

/** What a read-write lock's lease is, by its weight. */
function readWriteMode(weight: number): HoldMode {
  return weight === WRITE_PERMITS ? 'write' : 'read';
}

/** Enclosing holds a reentrant read joins, a reentrant write joins, and that refuse a write. */
const COVERS_READ: readonly HoldMode[] = ['read', 'write'];
const COVERS_WRITE: readonly HoldMode[] = ['write'];
const READ_ONLY: readonly HoldMode[] = ['read'];
