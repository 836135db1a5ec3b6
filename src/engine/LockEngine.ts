/**
 * The lock engine behind a {@link Locker}: holds the validated settings, routes acquisitions
 * through each key's local gate, keeps held leases valid (renewal, deadlines), releases leases
 * exactly once without ever throwing, and reports what happens on `events$`.
 */
import { asyncScheduler, defer, mergeMap, Subject, type MonoTypeOperatorFunction, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { isLockStoreError, LockStoreError, type LockLostError } from '../errors.js';
import type { AcquireOptions } from '../options/LockerOptions.js';
import { resolveAcquireOptions, validateKey, type AcquireSettings, type LockerSettings } from '../options/validate.js';
import type { ExtendOutcome, LockStore } from '../store/LockStore.js';
import { acquisition } from './acquisition.js';
import type { LockEvent } from './events.js';
import { KeyGate } from './gate/KeyGate.js';
import type { HeldLease } from './lease/HeldLease.js';
import type { Lease } from './lease/Lease.js';
import { LeaseTimers, type DueKind, type TimedLease } from './lease/LeaseTimers.js';
import { StoreLease, type StoreLeaseOwner } from './lease/StoreLease.js';
import type { Locker } from './Locker.js';
import { CallDeadlines } from './CallDeadlines.js';
import { callStore } from './storeCall.js';
import { whileHeld } from './whileHeld.js';

/** How long a refusal by the store makes a locker count as contended (see `recentlyContended`). */
const CONTENTION_MEMORY_MS = 2000;

export class LockEngine implements Locker, StoreLeaseOwner {
  readonly store: LockStore;
  readonly keyPrefix: string;
  readonly deadlines: CallDeadlines;
  readonly random: () => number;
  readonly scheduler: SchedulerLike | undefined;
  /** The scheduler of wait limits and back-off: the given one, or `asyncScheduler`. */
  readonly timerScheduler: SchedulerLike;
  readonly now: () => number;
  readonly timers = new LeaseTimers((leases) => this.renew(leases as StoreLease[]));
  readonly defaults: AcquireSettings;
  private readonly localGate: boolean;
  /** Bounds of local hand-offs per store grant. */
  readonly cohort: LockerSettings['cohort'];
  /** The gates of keys with a holder, waiters or a release in flight (see KeyGate). */
  private readonly gates = new Map<string, KeyGate>();
  private readonly events = new Subject<LockEvent>();
  readonly events$: Observable<LockEvent> = this.events.asObservable();

  constructor(settings: LockerSettings) {
    this.store = settings.store;
    this.keyPrefix = settings.keyPrefix;
    this.deadlines = new CallDeadlines(settings.commandTimeout);
    this.random = settings.random;
    const scheduler = settings.scheduler;
    this.scheduler = scheduler;
    this.timerScheduler = scheduler ?? asyncScheduler;
    this.now = scheduler ? () => scheduler.now() : () => performance.now();
    this.defaults = settings;
    this.localGate = settings.localGate;
    this.cohort = settings.cohort;
  }

  acquire(key: string, options?: AcquireOptions): Observable<Lease> {
    return this.acquisitionOf(key, this.settingsOf(options));
  }

  withLock<T>(key: string, options?: AcquireOptions): MonoTypeOperatorFunction<T> {
    const settings = this.settingsOf(options);
    const lease$ = this.acquisitionOf(key, settings);
    return (source) => lease$.pipe(mergeMap((lease) => whileHeld(lease, source, settings.onLost)));
  }

  using<R>(key: string, work: (lease: Lease) => ObservableInput<R>, options?: AcquireOptions): Observable<R> {
    const settings = this.settingsOf(options);
    const lease$ = this.acquisitionOf(key, settings);
    return lease$.pipe(mergeMap((lease) => whileHeld(lease, defer(() => work(lease)), settings.onLost)));
  }

  /**
   * Until when (performance.now()) this locker counts as recently contended: a store refused one of
   * its sessions less than {@link CONTENTION_MEMORY_MS} ago. Its new sessions then listen for
   * wake-up first and queue with their first attempt, instead of spending one attempt to learn that
   * the key is held (a gate is gone once its key is free, so it cannot remember this itself).
   */
  private contendedUntil = 0;

  /**
   * How long a store grant may be passed on locally: `cohort.maxMs`, but when `waiting` other
   * waiters are in the store's line, only so long that the line goes round in about
   * `cohort.roundMs`: `roundMs / (waiting + 1)`. Few processes in line get long turns (fewer store
   * commands), many get short ones (short waits).
   */
  turnMs(waiting: number | undefined): number {
    const { maxMs, roundMs } = this.cohort;
    return waiting === undefined || waiting <= 0 ? maxMs : Math.min(maxMs, roundMs / (waiting + 1));
  }

  noteContention(): void {
    this.contendedUntil = performance.now() + CONTENTION_MEMORY_MS;
  }

  recentlyContended(): boolean {
    return this.contendedUntil !== 0 && performance.now() < this.contendedUntil;
  }

  /** Keys with a local gate right now (holders, waiters or releases in flight). For tests. */
  get liveKeys(): number {
    return this.gates.size;
  }

  private settingsOf(options: AcquireOptions | undefined): AcquireSettings {
    return resolveAcquireOptions(options, this.defaults);
  }

  private acquisitionOf(key: string, settings: AcquireSettings): Observable<HeldLease> {
    const storeKey = this.keyPrefix + validateKey(key);
    this.store.checkKey?.(storeKey);
    return acquisition(this, key, storeKey, settings);
  }

  /** The gate of `storeKey`: shared by all of this locker's waiters, or one of its own without the local gate. */
  gateFor(key: string, storeKey: string): KeyGate {
    if (!this.localGate) return new KeyGate(this, key, storeKey, false);
    let gate = this.gates.get(storeKey);
    if (gate === undefined) {
      gate = new KeyGate(this, key, storeKey, true);
      this.gates.set(storeKey, gate);
    }
    return gate;
  }

  forgetGate(gate: KeyGate): void {
    if (this.gates.get(gate.storeKey) === gate) this.gates.delete(gate.storeKey);
  }

  /** The store lock a session won: its validity counts from `sentAt`, with the key's `ttl`. */
  openStoreLease(key: string, storeKey: string, token: string, ttl: number, sentAt: number, settings: AcquireSettings): StoreLease {
    return new StoreLease(this, key, storeKey, token, ttl, sentAt, settings.ttl, settings.renew);
  }

  /** Gives the store lock back (its renewal already stopped). Never rejects. */
  releaseStore(lease: StoreLease, holder: HeldLease | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      callStore(this.deadlines, 'release', lease.key, () => this.store.release(lease.storeKey, lease.token), {
        value: (deleted) => {
          if (holder !== undefined) this.reportReleased(holder, deleted, false);
          resolve(deleted);
        },
        error: (error) => {
          this.reportReleaseFailed(lease.key, lease.token, error);
          resolve(false);
        },
      });
    });
  }

  /** Gives back a lock the store granted to an acquisition nobody waits for any more. */
  releaseAbandoned(key: string, storeKey: string, token: string): void {
    callStore(this.deadlines, 'release', key, () => this.store.release(storeKey, token), {
      value: (deleted) => {
        if (this.events.observed) this.events.next({ type: 'abandoned-released', key, token, deleted });
      },
      error: (error) => this.reportReleaseFailed(key, token, error),
    });
  }

  extendLease(lease: StoreLease, ttl: number): Promise<ExtendOutcome> {
    return new Promise<ExtendOutcome>((resolve, reject) => {
      callStore(this.deadlines, 'extend', lease.key, () => this.store.extend(lease.storeKey, lease.token, ttl), { value: resolve, error: reject });
    });
  }

  /**
   * Renews leases whose renewal came due together, in one store call when the store can batch
   * (`extendMany`). Each lease watches only its deadline until the answer comes.
   */
  private renew(due: StoreLease[]): void {
    // A lease collected with the batch may have been given back since (a loss handled in the same
    // timer firing can end a sibling stream): it must not be extended, nor rescheduled.
    const leases = due.filter((lease) => lease.isHeld);
    if (leases.length === 0) return;
    const sentAt = performance.now();
    const requests = leases.map((lease) => ({ key: lease.storeKey, token: lease.token, ttlMs: lease.renewTtl }));
    for (const lease of leases) lease.renewing();
    const store = this.store;
    const run =
      store.extendMany !== undefined && requests.length > 1
        ? () => store.extendMany!(requests)
        : () => Promise.all(requests.map((r) => store.extend(r.key, r.token, r.ttlMs)));
    const what = leases.length === 1 ? leases[0]!.key : `${leases[0]!.key} (and ${leases.length - 1} more leases)`;
    callStore(this.deadlines, 'extend', what, run, {
      value: (outcomes) => {
        leases.forEach((lease, i) => {
          const outcome = outcomes[i];
          if (outcome === 'extended' || outcome === 'gone' || outcome === 'taken') lease.extended(outcome, sentAt, requests[i]!.ttlMs);
          else lease.renewFailed(new LockStoreError(lease.key, 'extend', `the store answered ${String(outcome)}, not 'extended', 'gone' or 'taken'`));
        });
      },
      error: (error) => {
        for (const lease of leases) lease.renewFailed(error);
      },
    });
  }

  schedule(lease: StoreLease, kind: DueKind, dueAt: number, slack?: number): void {
    this.timers.schedule(lease as TimedLease, kind, dueAt, slack);
  }

  unschedule(lease: StoreLease): void {
    this.timers.cancel(lease);
  }

  /** `startedAt` on the locker's clock: the wait is only measured when someone listens. */
  reportAcquired(key: string, token: string, fence: number, startedAt: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'acquired', key, token, fence, waitedMs: this.now() - startedAt, attempts });
  }

  reportReleased(holder: HeldLease, deleted: boolean, passed: boolean): void {
    if (this.events.observed) this.events.next({ type: 'released', key: holder.key, token: holder.token, fence: holder.fence, heldMs: performance.now() - holder.acquiredAt, deleted, passed });
  }

  reportTimedOut(key: string, waitedMs: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'timed-out', key, waitedMs, attempts });
  }

  reportAcquireFailed(key: string, error: unknown, attempts: number): void {
    if (this.events.observed && isLockStoreError(error)) this.events.next({ type: 'acquire-failed', key, error, attempts });
  }

  reportRenewed(lease: StoreLease): void {
    if (this.events.observed) this.events.next({ type: 'renewed', key: lease.key, token: lease.token, validForMs: lease.validUntil - performance.now() });
  }

  reportRenewFailed(lease: StoreLease, error: LockStoreError): void {
    if (this.events.observed) this.events.next({ type: 'renew-failed', key: lease.key, token: lease.token, error, validForMs: lease.validUntil - performance.now() });
  }

  reportLost(holder: HeldLease, error: LockLostError): void {
    if (this.events.observed) this.events.next({ type: 'lost', key: holder.key, token: holder.token, fence: holder.fence, reason: error.reason, error });
  }

  private reportReleaseFailed(key: string, token: string, error: LockStoreError): void {
    if (this.events.observed) this.events.next({ type: 'release-failed', key, token, error });
  }
}
