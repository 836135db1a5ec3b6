/**
 * The public face of the engine: what `createLocker()` returns.
 */
import type { MonoTypeOperatorFunction, Observable, ObservableInput } from 'rxjs';
import type { AcquireOptions, LockOperatorOptions } from '../options/LockerOptions.js';
import type { AcquirePermitOptions, AcquireReadWriteOptions, PermitCount, PermitOptions, ReadWriteLockOptions } from '../options/PermitOptions.js';
import type { LockedWork } from './acquisition/workSignal.js';
import type { LeaseSet } from './multikey/LeaseSet.js';
import type { LockerLockInfo, WaitUntilFreeOptions } from './inspection/KeyInspector.js';
import type { LockerPermitsInfo, WaitUntilPermitsFreeOptions } from './inspection/SharedInspector.js';
import type { LockEvent } from './events/events.js';
import type { Lease } from './lease/Lease.js';

/**
 * The work of `usingLocks`: gets the set of leases and a signal that aborts when it should stop
 * (a lease of the set was lost: `signal.reason` is the `LockLostError`; or the subscription ended:
 * an `'AbortError'`).
 *
 * @example
 * ```ts
 * const work: LockedSetWork<void> = async (locks, signal) => {
 *   await transfer(from, to, amount, { fences: locks.fences, signal });
 * };
 * locker.usingLocks([`account:${from}`, `account:${to}`], work).subscribe({ error: (e) => console.error(e) });
 * ```
 */
export type LockedSetWork<R> = (locks: LeaseSet, signal: AbortSignal) => ObservableInput<R>;

/**
 * Takes and gives back locks on one store. Create one with `createLocker()`.
 *
 * @example
 * ```ts
 * import { createLocker, type Locker } from 'rxjs-lock';
 *
 * const locker: Locker = createLocker({ store }); // a RedisLockStore to exclude across processes
 * sendInvoice$(42).pipe(locker.withLock('invoice:42', { ttl: 5_000 })).subscribe();
 * process.on('SIGTERM', () => void locker.close());
 * ```
 */
export interface Locker {
  /**
   * Every acquisition, release, time-out and failure, as typed {@link LockEvent}s. Hot: only
   * events after subscription are seen. Failures that cannot reach a stream (a release after the
   * stream ended) are reported only here.
   */
  readonly events$: Observable<LockEvent>;

  /**
   * A cold Observable that takes the lock on subscription, then emits the {@link Lease} and
   * completes; or errors with `LockTimeoutError` (held by someone else for the whole
   * `waitTimeout`) or `LockStoreError` (the store failed). Unsubscribing before the lease is
   * emitted gives back a lock the store grants anyway. The caller owns the emitted lease and must
   * call `lease.release()`: until then it is renewed (unless `renew: false`), and if it is lost
   * `lease.lost$` says so. Prefer {@link Locker.withLock} or {@link Locker.using}.
   *
   * Throws `LockOptionsError` at once for an invalid key or option.
   *
   * @example
   * ```ts
   * const lease = await firstValueFrom(locker.acquire('invoice:42', { ttl: 5_000 }));
   * try {
   *   await sendInvoice(42);
   * } finally {
   *   await lease.release();
   * }
   * ```
   */
  acquire(key: string, options?: AcquireOptions): Observable<Lease>;

  /**
   * Operator: subscribes to the source only once the lock on `key` is held, and releases it
   * exactly once when the result completes, errors or is unsubscribed. Acquisition errors
   * (`LockTimeoutError`, `LockStoreError`) are the result's errors; the source is then never
   * subscribed.
   *
   * Complete and error reach the subscriber only after the release has been answered, so code
   * after `await lastValueFrom(work$.pipe(locker.withLock(k)))` runs with the lock given back.
   * `finalize` upstream of `withLock` runs before the release is sent. On unsubscribe the release
   * starts at once and finishes in the background. Throws `LockOptionsError` at once for an
   * invalid key or option.
   *
   * While the source runs, the lease is renewed every `ttl / 3`. If it is lost anyway (the key
   * expired or was taken, or the store could not be reached before the lease's deadline), the
   * source is unsubscribed and the result errors with `LockLostError` at once — or, with
   * `onLost: 'notify'`, the source keeps running and the loss is only reported on `events$`.
   *
   * With `onBusy: 'skip'` it tries once: if the lock is held elsewhere, the result completes
   * without subscribing to the source (a `timed-out` event with `skipped: true`); a store failure
   * still errors with `LockStoreError`.
   *
   * @example
   * ```ts
   * orderEvents$.pipe(
   *   mergeMap((e) => applyToInventory(e).pipe(locker.withLock(`inventory:${e.sku}`)), 8),
   * ).subscribe();
   * ```
   */
  withLock<T>(key: string, options?: LockOperatorOptions): MonoTypeOperatorFunction<T>;

  /**
   * Runs `work(lease, signal)` while holding the lock on `key`, releasing it when the Observable
   * (or Promise) `work` returned ends in any way (a synchronous throw in `work` releases too).
   * Like {@link Locker.withLock}, with the lease handed to the work: pass `lease.fence` to the
   * protected resource so it can refuse a holder that lost the lock without noticing.
   *
   * `signal` is an `AbortSignal` that aborts when the lease is lost (its `reason` is the
   * `LockLostError`, also with `onLost: 'notify'`), or when the work's subscription ends for any
   * other reason — the subscriber left, or the work ended (reason: a `DOMException` named
   * `'AbortError'`). Hand it to Promise-based work (`fetch`, database drivers) so that it stops
   * when the lock no longer protects it. `onBusy: 'skip'` works as for `withLock`.
   *
   * @example
   * ```ts
   * import { isLockLostError } from 'rxjs-lock';
   *
   * locker.using('report', (lease, signal) =>
   *   fetch('https://reports.example/build', { method: 'POST', body: String(lease.fence), signal }),
   * ).subscribe({
   *   next: (response) => console.log('built', response.status),
   *   error: (e) => console.error(isLockLostError(e) ? 'lock lost: the build was aborted' : e),
   * });
   * ```
   */
  using<R>(key: string, work: LockedWork<R>, options?: LockOperatorOptions): Observable<R>;

  /**
   * Operator: a counting semaphore. Subscribes to the source once `options.permits` (default 1) of
   * the `options.limit` permits of `key` are this stream's, and gives them back exactly once when
   * the result completes, errors or is unsubscribed — `withLock`'s guarantees (cold,
   * cancellation-safe, release never thrown, renewal, `LockLostError`, `onBusy: 'skip'`), for up to
   * `limit` holders at once.
   *
   * Waiters are served first come, first served across processes (the store's line): a waiter
   * asking for several permits is never overtaken by single-permit ones. Each holder has a lease of
   * its own (own token, own fence, own TTL, renewed while the work runs), so a crashed holder's
   * permits come back when its TTL ends. `limit` is per acquisition, not stored: each grant must fit
   * its own `limit`, holders are never revoked (see {@link PermitCount.limit}).
   *
   * Needs a store with shared locks (the in-memory and Redis stores): with another (`RedlockStore`)
   * the result errors with `LockCapabilityError`. Semaphores and read-write locks named `key` are
   * apart from the mutex `key` of `withLock`. Throws `LockOptionsError` at once for an invalid key or
   * option (`limit` and `permits`: positive safe integers, `permits ≤ limit`).
   *
   * @example
   * ```ts
   * // at most 4 renders at once across every instance of the service
   * jobs$.pipe(
   *   mergeMap((job) => render(job).pipe(locker.withPermit('renderer', { limit: 4 }))),
   * ).subscribe();
   * ```
   */
  withPermit<T>(key: string, options: PermitOptions): MonoTypeOperatorFunction<T>;

  /**
   * {@link Locker.withPermit} with the lease handed to the work (its own `fence`, `validUntil`,
   * `lost$`), and an `AbortSignal` as {@link Locker.using} gives.
   *
   * @example
   * ```ts
   * locker.usingPermit('api:quota', (lease, signal) => fetch(url, { signal }), { limit: 10 }).subscribe();
   * ```
   */
  usingPermit<R>(key: string, work: LockedWork<R>, options: PermitOptions): Observable<R>;

  /**
   * A cold Observable that takes `options.permits` (default 1) of the `options.limit` permits of
   * `key` and emits their {@link Lease}, which the caller must release (as {@link Locker.acquire}).
   *
   * @example
   * ```ts
   * const lease = await firstValueFrom(locker.acquirePermit('db:migrations', { limit: 2 }));
   * try { await migrate(); } finally { await lease.release(); }
   * ```
   */
  acquirePermit(key: string, options: AcquirePermitOptions): Observable<Lease>;

  /**
   * Operator: a read lock on `key`. Readers share the lock with each other and exclude writers
   * ({@link Locker.withWriteLock}); otherwise as {@link Locker.withLock}. Waiters are served first
   * come, first served: once a writer waits, readers that come later queue behind it, so writers are
   * not starved by a stream of readers. Needs a store with shared locks (else `LockCapabilityError`).
   * With `reentrant: true` (see {@link ReadWriteLockOptions}), a read lock subscribed inside the
   * work of a read or write lock of the same key joins it instead of waiting (a nested read behind
   * a queued writer would otherwise wait for itself), and a write lock inside a read lock fails at
   * once with `LockUpgradeError`.
   *
   * @example
   * ```ts
   * readConfig$.pipe(locker.withReadLock('config')).subscribe();
   * ```
   */
  withReadLock<T>(key: string, options?: ReadWriteLockOptions): MonoTypeOperatorFunction<T>;

  /**
   * Operator: a write lock on `key`, exclusive of every reader and writer. Each grant has a fencing
   * token (`lease.fence` in {@link Locker.usingWriteLock}) above every earlier grant of the key's
   * read-write lock, across processes and a Redis that lost its data. Otherwise as
   * {@link Locker.withReadLock}.
   *
   * @example
   * ```ts
   * writeConfig$.pipe(locker.withWriteLock('config')).subscribe();
   * ```
   */
  withWriteLock<T>(key: string, options?: ReadWriteLockOptions): MonoTypeOperatorFunction<T>;

  /**
   * {@link Locker.withReadLock} with the lease (and an `AbortSignal`) handed to the work.
   *
   * @example
   * ```ts
   * locker.usingReadLock('config', () => loadConfig()).subscribe((config) => apply(config));
   * ```
   */
  usingReadLock<R>(key: string, work: LockedWork<R>, options?: ReadWriteLockOptions): Observable<R>;

  /**
   * {@link Locker.withWriteLock} with the lease (and an `AbortSignal`) handed to the work: pass
   * `lease.fence` to the protected resource.
   *
   * @example
   * ```ts
   * locker.usingWriteLock('config', (lease) => saveConfig(config, lease.fence)).subscribe();
   * ```
   */
  usingWriteLock<R>(key: string, work: LockedWork<R>, options?: ReadWriteLockOptions): Observable<R>;

  /**
   * A read lock's lease, which the caller must release (as {@link Locker.acquire}).
   *
   * @example
   * ```ts
   * const lease = await firstValueFrom(locker.acquireReadLock('config'));
   * try { console.log(await readConfig()); } finally { await lease.release(); }
   * ```
   */
  acquireReadLock(key: string, options?: AcquireReadWriteOptions): Observable<Lease>;

  /**
   * A write lock's lease, which the caller must release (as {@link Locker.acquire}).
   *
   * @example
   * ```ts
   * const lease = await firstValueFrom(locker.acquireWriteLock('config'));
   * try { await writeConfig(next, lease.fence); } finally { await lease.release(); }
   * ```
   */
  acquireWriteLock(key: string, options?: AcquireReadWriteOptions): Observable<Lease>;

  /**
   * Operator: {@link Locker.withLock} for several keys at once. Subscribes to the source only once
   * every key of `keys` is held, and gives them all back exactly once when the result completes,
   * errors or is unsubscribed. All or none: the keys are taken one after the other, and if the
   * wait ends before the last one is held — `LockTimeoutError` (a key stayed held; its `key` says
   * which), `LockStoreError`, the loss of a key already taken (`LockLostError`), or an
   * unsubscribe — every key taken so far is given back and the source is never subscribed.
   *
   * No deadlock between overlapping sets: each distinct key is taken once (a key given twice
   * counts once), in one global order — sorted by the key as the store sees it (`keyPrefix` +
   * key), by UTF-16 code unit — so two callers, in any processes, take their common keys in the
   * same order. One `waitTimeout` covers the whole set, counted from subscription. Each key waits
   * in its own line (local gate, the store's line and wake-ups), has its own lease, fence and
   * renewal; a loss of any of them is the set's loss (`onLost` as for one key: with `'error'`,
   * the source is unsubscribed, the other keys given back, and the result errors with that key's
   * `LockLostError`). `onBusy: 'skip'` tries each key once and completes empty if one is held.
   *
   * Cost: one store acquisition per key, one after the other (on a Redis Cluster too, where the
   * keys may live on different nodes: there is no atomic multi-slot script, and none is needed),
   * so a set of n free keys takes n round trips, and each key taken waits held while the later
   * ones are waited for. At most 64 distinct keys. Throws `LockOptionsError` at once for an empty
   * or too long array (`keys`), an invalid key (`keys[i]`) or option.
   *
   * With `reentrant: true`, keys the enclosing stream holds are joined (not taken again, whatever
   * their place in the order), and streams nested in the work join any key of the set. A set that
   * joins a key held around it while taking others below it in the order is no longer taken in the
   * global order: sets that nest that way can wait for each other until `waitTimeout`.
   *
   * @example
   * ```ts
   * // move stock between two warehouses: both rows locked, whichever order callers name them in
   * moveStock(from, to, sku).pipe(
   *   locker.withLocks([`stock:${from}:${sku}`, `stock:${to}:${sku}`], { waitTimeout: 5_000 }),
   * ).subscribe();
   * ```
   */
  withLocks<T>(keys: readonly string[], options?: LockOperatorOptions): MonoTypeOperatorFunction<T>;

  /**
   * {@link Locker.withLocks} with the leases handed to the work: runs `work(locks, signal)` while
   * every key of `keys` is held, and gives them all back when what it returned ends in any way.
   * `locks.fences.get(key)` is each key's fencing token; `signal` aborts when any lease of the set
   * is lost (reason: its `LockLostError`) or the work's subscription ends otherwise.
   *
   * @example
   * ```ts
   * locker.usingLocks(['account:1', 'account:2'], async (locks, signal) => {
   *   await ledger.transfer('account:1', 'account:2', 100, {
   *     fences: [locks.fences.get('account:1')!, locks.fences.get('account:2')!],
   *     signal,
   *   });
   * }).subscribe({ error: (e) => console.error('transfer not done:', e) });
   * ```
   */
  usingLocks<R>(keys: readonly string[], work: LockedSetWork<R>, options?: LockOperatorOptions): Observable<R>;

  /**
   * {@link Locker.acquire} for several keys at once: a cold Observable that takes every key of
   * `keys` (all or none, in the global order of {@link Locker.withLocks}, one `waitTimeout` for
   * the set) and emits the {@link LeaseSet}, then completes; or errors, with every key taken so far
   * given back. The caller owns the set and must call `locks.release()`, which gives back every
   * key; until then each lease is renewed, and `locks.lost$` tells of the first one lost (the
   * others stay held until the release).
   *
   * @example
   * ```ts
   * const locks = await firstValueFrom(locker.acquireLocks(['invoice:42', 'customer:7']));
   * try {
   *   await sendInvoice(42, { fence: locks.fences.get('invoice:42')! });
   * } finally {
   *   await locks.release();
   * }
   * ```
   */
  acquireLocks(keys: readonly string[], options?: AcquireOptions): Observable<LeaseSet>;

  /**
   * Is `key` locked now? A cold Observable that answers once and completes: `true` when one of
   * this locker's acquisitions holds it (no store call then) or the store says someone holds it,
   * `false` when it is free. Takes nothing: no lock, no place in line. Errors with
   * `LockStoreError` when the store fails or does not answer within `commandTimeout`. With a store
   * that has `inspect` (the in-memory and Redis stores) it asks that; with one that has only the
   * core contract, it probes with an owner-checked `extend` under a token no acquisition ever had,
   * which changes nothing. The answer may be stale by the time it arrives; to act on a free key,
   * acquire it. Throws `LockOptionsError` at once for an invalid key.
   *
   * @example
   * ```ts
   * locker.isLocked('job:nightly').subscribe((locked) => console.log(locked ? 'running elsewhere' : 'idle'));
   * ```
   */
  isLocked(key: string): Observable<boolean>;

  /**
   * Emits once (and completes) when `key` is free, without taking it: what `waitForUnlock` is to
   * async-mutex. It looks at once, then polls with the `retry` back-off, each sleep capped by the
   * holder's remaining TTL; it errors with `LockTimeoutError` if the key is still held after
   * `waitTimeout`, and with `LockStoreError` if the store fails. Unsubscribing stops it. The key
   * may be taken again right after: use it to wait for a running job, not for exclusion. Throws
   * `LockOptionsError` at once for an invalid key or option.
   *
   * @example
   * ```ts
   * // start the report once the nightly import (another instance) is done
   * locker.waitUntilFree('job:import', { waitTimeout: 60_000 }).pipe(
   *   mergeMap(() => buildReport()),
   * ).subscribe();
   * ```
   */
  waitUntilFree(key: string, options?: WaitUntilFreeOptions): Observable<void>;

  /**
   * Who holds `key`: a cold Observable of the store's answer — the holder's token, remaining TTL in
   * ms, fence (when the store keeps it: not for an uncontended Redis grant), the waiters in the
   * store's line — plus this locker's own side (`heldHere`, `waitingHere`), or `null` when the key
   * is free. Errors with `LockCapabilityError` when the store has no `inspect`, `LockStoreError`
   * when it fails. Throws `LockOptionsError` at once for an invalid key.
   *
   * @example
   * ```ts
   * locker.inspect('invoice:42').subscribe((info) =>
   *   console.log(info === null ? 'free' : `held by ${info.token} for ${info.ttl} ms more, ${info.waiting} waiting`),
   * );
   * ```
   */
  inspect(key: string): Observable<LockerLockInfo | null>;

  /**
   * Who holds the semaphore or read-write lock `key` (the shared lock of `withPermit`,
   * `withReadLock` and `withWriteLock`; apart from the mutex `key` that {@link Locker.inspect}
   * answers for): a cold Observable of the store's answer — the permits used, each live holder
   * (its token, permits held as `weight`, remaining TTL in ms, fence, whether it is a `writer` and
   * whether it is `heldHere`, one of this locker's), the waiters in the store's line — plus this
   * locker's waits (`waitingHere`), or `null` when it has neither holders nor waiters. Takes
   * nothing. Errors with `LockCapabilityError` when the store has no shared locks or cannot
   * inspect them, `LockStoreError` when it fails. Throws `LockOptionsError` at once for an invalid key.
   *
   * @example
   * ```ts
   * locker.inspectPermits('renderer').subscribe((info) =>
   *   console.log(info === null ? 'idle' : `${info.used} permits in use, ${info.waiting} waiting`),
   * );
   * ```
   */
  inspectPermits(key: string): Observable<LockerPermitsInfo | null>;

  /**
   * Is the read-write lock `key` held by readers now? A cold Observable that answers once and
   * completes: `true` when at least one holder holds it in shared mode (a reader; on a semaphore's
   * key, a holder of some of its permits), `false` otherwise. Takes nothing. The answer may be
   * stale by the time it arrives. Errors as {@link Locker.inspectPermits}.
   *
   * @example
   * ```ts
   * locker.isReadLocked('config').subscribe((reading) => console.log(reading ? 'being read' : 'no reader'));
   * ```
   */
  isReadLocked(key: string): Observable<boolean>;

  /**
   * Is the read-write lock `key` held by a writer now? A cold Observable that answers once and
   * completes. Takes nothing; the answer may be stale by the time it arrives. Errors as
   * {@link Locker.inspectPermits}.
   *
   * @example
   * ```ts
   * locker.isWriteLocked('config').subscribe((writing) => console.log(writing ? 'being written' : 'no writer'));
   * ```
   */
  isWriteLocked(key: string): Observable<boolean>;

  /**
   * Emits once (and completes) when the semaphore or read-write lock `key` is free, without taking
   * it: with `until: 'no-holder'` (the default) once nobody holds any of its permits, with
   * `until: 'no-writer'` once no writer holds it. Looks at once, then polls with the `retry`
   * back-off, each sleep capped by the first holder's remaining TTL; errors with
   * `LockTimeoutError` if it is still held after `waitTimeout`, with `LockStoreError` if the store
   * fails, with `LockCapabilityError` as {@link Locker.inspectPermits}. It never stands in the
   * store's line, so waiters there may take the key right after: use it to wait for running work,
   * not for exclusion. Throws `LockOptionsError` at once for an invalid key or option.
   *
   * @example
   * ```ts
   * // reload the config once the writer that is changing it is done
   * locker.waitUntilPermitsFree('config', { until: 'no-writer', waitTimeout: 30_000 }).pipe(
   *   mergeMap(() => loadConfig()),
   * ).subscribe();
   * ```
   */
  waitUntilPermitsFree(key: string, options?: WaitUntilPermitsFreeOptions): Observable<void>;

  /**
   * Closes the locker: new acquisitions error with `LockerClosedError`; acquisitions still waiting
   * fail with it (and leave the store's line); every lease it holds is given back and its
   * `withLock`/`using` stream errors with `LockLostError` (reason `'locker-closed'`, whatever
   * `onLost` says); renewals and timers stop; `events$` completes. The store is closed too when
   * the locker made it (the default in-memory store), never when you passed it in: close your
   * `RedisLockStore` and your ioredis client yourself, after the locker. Resolves once every
   * release and store call in flight was answered or timed out (`commandTimeout`); never rejects.
   * Calling it again returns the same promise. `await using locker = createLocker(…)` calls it.
   *
   * @example
   * ```ts
   * const locker = createLocker({ store });
   * process.once('SIGTERM', async () => {
   *   await locker.close(); // waiting acquisitions fail, held locks are given back
   *   store.close();
   *   await redis.quit();
   * });
   * ```
   */
  close(): Promise<void>;

  /** `close()`, for `await using locker = createLocker(…)`. */
  [Symbol.asyncDispose](): Promise<void>;

  /** True once `close()` was called. */
  readonly closed: boolean;
}
