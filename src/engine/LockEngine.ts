/**
 * The lock engine behind a {@link Locker}: holds the validated settings, runs acquisitions,
 * releases leases exactly once without ever throwing, and reports what happens on `events$`.
 */
import { defer, mergeMap, Subject, type MonoTypeOperatorFunction, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import type { LockStoreError } from '../errors.js';
import type { AcquireOptions } from '../options/LockerOptions.js';
import { resolveAcquireOptions, validateKey, type AcquireSettings, type LockerSettings } from '../options/validate.js';
import type { LockStore } from '../store/LockStore.js';
import { acquisition } from './acquisition.js';
import type { LockEvent } from './events.js';
import type { HeldLease, Lease, LeaseOwner } from './Lease.js';
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
    this.defaults = { ttl: settings.ttl, waitTimeout: settings.waitTimeout, retry: settings.retry };
  }

  acquire(key: string, options?: AcquireOptions): Observable<Lease> {
    return acquisition(this, validateKey(key), resolveAcquireOptions(options, this.defaults));
  }

  withLock<T>(key: string, options?: AcquireOptions): MonoTypeOperatorFunction<T> {
    const lease$ = this.acquire(key, options);
    return (source) => lease$.pipe(mergeMap((lease) => whileHeld(lease, source)));
  }

  using<R>(key: string, work: (lease: Lease) => ObservableInput<R>, options?: AcquireOptions): Observable<R> {
    const lease$ = this.acquire(key, options);
    return lease$.pipe(mergeMap((lease) => whileHeld(lease, defer(() => work(lease)))));
  }

  /** Called once per lease by {@link HeldLease.release}. Never rejects. */
  releaseLease(lease: HeldLease): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      callStore(this.deadlines, 'release', lease.key, () => this.store.release(lease.storeKey, lease.token), {
        value: (deleted) => {
          if (this.events.observed) this.events.next({ type: 'released', key: lease.key, token: lease.token, heldMs: performance.now() - lease.acquiredAt, deleted });
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

  reportAcquired(key: string, token: string, waitedMs: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'acquired', key, token, waitedMs, attempts });
  }

  reportTimedOut(key: string, waitedMs: number, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'timed-out', key, waitedMs, attempts });
  }

  reportAcquireFailed(key: string, error: LockStoreError, attempts: number): void {
    if (this.events.observed) this.events.next({ type: 'acquire-failed', key, error, attempts });
  }

  private reportReleaseFailed(key: string, token: string, error: LockStoreError): void {
    if (this.events.observed) this.events.next({ type: 'release-failed', key, token, error });
  }
}
