/**
 * The lock engine behind a {@link Locker}: holds the validated settings, runs acquisitions,
 * keeps held leases valid (renewal, deadlines), releases leases exactly once without ever
 * throwing, and reports what happens on `events$`.
 */
import { defer, mergeMap, Subject, type MonoTypeOperatorFunction, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { LockStoreError, type LockLostError } from '../errors.js';
import type { AcquireOptions } from '../options/LockerOptions.js';
import { resolveAcquireOptions, validateKey, type AcquireSettings, type LockerSettings } from '../options/validate.js';
import type { ExtendOutcome, LockStore } from '../store/LockStore.js';
import { acquisition } from './acquisition.js';
import type { LockEvent } from './events.js';
import { HeldLease, type LeaseOwner } from './lease/HeldLease.js';
import type { Lease } from './lease/Lease.js';
import { LeaseTimers, type DueKind, type TimedLease } from './lease/LeaseTimers.js';
import type { Locker } from './Locker.js';
import { CallDeadlines } from './CallDeadlines.js';
import { callStore } from './storeCall.js';
import { whileHeld } from './whileHeld.js';

export class LockEngine implements Locker, LeaseOwner {
  readonly store: LockStore;
  readonly keyPrefix: string;
  readonly deadlines: CallDeadlines;
  readonly random: () => number;
  readonly scheduler: SchedulerLike | undefined;
  readonly now: () => number;
  readonly timers = new LeaseTimers((leases) => this.renew(leases as HeldLease[]));
  private readonly defaults: AcquireSettings;
  private readonly events = new Subject<LockEvent>();
  readonly events$: Observable<LockEvent> = this.events.asObservable();

  constructor(settings: LockerSettings) {
    this.store = settings.store;
    this.keyPrefix = settings.keyPrefix;
    this.deadlines = new CallDeadlines(settings.commandTimeout);
    this.random = settings.random;
    const scheduler = settings.scheduler;
    this.scheduler = scheduler;
    this.now = scheduler ? () => scheduler.now() : () => performance.now();
    this.defaults = settings;
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

  private settingsOf(options: AcquireOptions | undefined): AcquireSettings {
    return resolveAcquireOptions(options, this.defaults);
  }

  private acquisitionOf(key: string, settings: AcquireSettings): Observable<HeldLease> {
    const storeKey = this.keyPrefix + validateKey(key);
    this.store.checkKey?.(storeKey);
    return acquisition(this, key, storeKey, settings);
  }

  /** A lease the store granted: starts its clock (renewal or deadline). */
  openLease(key: string, storeKey: string, token: string, fence: number, settings: AcquireSettings, sentAt: number): HeldLease {
    const lease = new HeldLease(this, key, storeKey, token, fence, settings.ttl, sentAt, settings.renew);
    lease.start();
    return lease;
  }

  /** Called once per lease by {@link HeldLease.release}. Never rejects. */
  releaseLease(lease: HeldLease): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      callStore(this.deadlines, 'release', lease.key, () => this.store.release(lease.storeKey, lease.token), {
        value: (deleted) => {
          if (this.events.observed) this.events.next({ type: 'released', key: lease.key, token: lease.token, fence: lease.fence, heldMs: performance.now() - lease.acquiredAt, deleted });
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

  extendLease(lease: HeldLease, ttl: number): Promise<ExtendOutcome> {
    return new Promise<ExtendOutcome>((resolve, reject) => {
      callStore(this.deadlines, 'extend', lease.key, () => this.store.extend(lease.storeKey, lease.token, ttl), { value: resolve, error: reject });
    });
  }

  /**
   * Renews leases whose renewal came due together, in one store call when the store can batch
   * (`extendMany`). Each lease watches only its deadline until the answer comes.
   */
  private renew(leases: HeldLease[]): void {
    const sentAt = performance.now();
    const requests = leases.map((lease) => ({ key: lease.storeKey, token: lease.token, ttlMs: lease.ttl }));
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
          else lease.renewFailed(this.badStoreAnswer(lease.key, outcome));
        });
      },
      error: (error) => {
        for (const lease of leases) lease.renewFailed(error);
      },
    });
  }

  private badStoreAnswer(key: string, answer: unknown): LockStoreError {
    return new LockStoreError(key, 'extend', `the store answered ${String(answer)}, not 'extended', 'gone' or 'taken'`);
  }

  schedule(lease: HeldLease, kind: DueKind, dueAt: number, slack?: number): void {
    this.timers.schedule(lease as TimedLease, kind, dueAt, slack);
  }

  unschedule(lease: HeldLease): void {
    this.timers.cancel(lease);
  }

  reportAcquired(key: string, token: string, fence: number, waitedMs: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'acquired', key, token, fence, waitedMs, attempts });
  }

  reportTimedOut(key: string, waitedMs: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'timed-out', key, waitedMs, attempts });
  }

  reportAcquireFailed(key: string, error: LockStoreError, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'acquire-failed', key, error, attempts });
  }

  reportRenewed(lease: HeldLease): void {
    if (this.events.observed) this.events.next({ type: 'renewed', key: lease.key, token: lease.token, fence: lease.fence, validForMs: lease.validUntil - performance.now() });
  }

  reportRenewFailed(lease: HeldLease, error: LockStoreError): void {
    if (this.events.observed) this.events.next({ type: 'renew-failed', key: lease.key, token: lease.token, error, validForMs: lease.validUntil - performance.now() });
  }

  reportLost(lease: HeldLease, error: LockLostError): void {
    if (this.events.observed) this.events.next({ type: 'lost', key: lease.key, token: lease.token, fence: lease.fence, reason: error.reason, error });
  }

  private reportReleaseFailed(key: string, token: string, error: LockStoreError): void {
    if (this.events.observed) this.events.next({ type: 'release-failed', key, token, error });
  }
}
