/**
 * The options a locker and each acquisition accept, documented where they are declared, with
 * their defaults. Validation lives in ./validate.ts.
 */
import type { ObservableInput, SchedulerLike } from 'rxjs';
import type { LockStore } from '../store/LockStore.js';

/**
 * Jittered back-off between attempts on a held lock: each sleep is drawn uniformly from
 * `[minDelay, minDelay + jitter)` milliseconds, and never exceeds what is left of `waitTimeout`.
 *
 * @example
 * ```ts
 * const retry: RetryOptions = { minDelay: 50, jitter: 100 }; // sleeps of 50–150 ms between attempts
 * report$.pipe(locker.withLock('report:daily', { retry })).subscribe();
 * ```
 */
export interface RetryOptions {
  /**
   * Shortest sleep between two attempts, in ms (an integer from 0 to 2147483647).
   * @default 10
   */
  minDelay?: number;
  /**
   * Width of the random part of each sleep, in ms (an integer from 0 to 2147483647).
   * @default 20
   */
  jitter?: number;
}

/**
 * Custom back-off, as RxJS `retry({ delay })` takes it: called after each failed attempt
 * (`attempt` counts from 1), the next attempt starts when the returned input emits. If it
 * completes without emitting, the acquisition stops waiting and errors with `LockTimeoutError`;
 * if it errors, the acquisition errors with that error. The wait limit still applies.
 *
 * @example
 * ```ts
 * // exponential back-off: 5, 10, 20, … ms, capped at 200 ms
 * const retry = (attempt: number) => timer(Math.min(200, 5 * 2 ** (attempt - 1)));
 * ```
 */
export type RetryDelay = (attempt: number) => ObservableInput<unknown>;

/**
 * Lease renewal (the watchdog): while a lease is held, it is extended every `interval` ms by an
 * owner-checked script, so work that outlives the TTL keeps the lock. Renewals of many leases of
 * one locker that fall due close together share one round trip (a pipeline).
 *
 * @example
 * ```ts
 * const renew: RenewOptions = { interval: 2_000 }; // extend the 10 s lease every 2 s
 * const lease = await firstValueFrom(locker.acquire('import:catalog', { ttl: 10_000, renew }));
 * ```
 */
export interface RenewOptions {
  /**
   * Time between renewals, in ms: an integer from 1 to just below the lease's validity
   * (`ttl − (ttl·1% + 2 ms)`).
   * @default ttl / 3 (rounded down, at least 1)
   */
  interval?: number;
}

/**
 * What a `withLock`/`using` stream does when its lease is lost (expired, taken over, or not
 * renewed before its deadline because the store was unreachable):
 * - `'error'`: unsubscribe the work and error with `LockLostError` at once;
 * - `'notify'`: keep the work running; the loss is reported on `lease.lost$` and `events$` only.
 *
 * @example
 * ```ts
 * const onLost: OnLost = 'notify'; // the work keeps running; the loss is only reported
 * indexing$.pipe(locker.withLock('search:index', { onLost })).subscribe();
 * ```
 */
export type OnLost = 'error' | 'notify';

/**
 * Options of one acquisition; each overrides the locker's value of the same name.
 *
 * @example
 * ```ts
 * const options: AcquireOptions = { ttl: 5_000, waitTimeout: 1_000, retry: { minDelay: 20, jitter: 40 } };
 * const lease = await firstValueFrom(locker.acquire('invoice:42', options));
 * ```
 */
export interface AcquireOptions {
  /**
   * Lease length in ms: how long the store keeps the lock if its holder never releases it
   * (an integer from 1 to 2147483647).
   * @default 30000
   */
  ttl?: number;
  /**
   * How long to wait for a lock held by someone else before failing with `LockTimeoutError`,
   * in ms (an integer from 0 to 2147483647, or `Infinity`). `0` makes exactly one attempt.
   * @default 10000
   */
  waitTimeout?: number;
  /**
   * Back-off between attempts: `{ minDelay, jitter }`, or a function returning when to try
   * again (see {@link RetryDelay}).
   *
   * The default sleeps 10–30 ms (mean 20 ms). 10 ms is the fastest poll of the peers
   * (redis-semaphore, the hand-written baseline); drawing each sleep over a 3× range keeps
   * waiters that failed together from retrying in lockstep, and the 20 ms mean halves their
   * wasted round trips on a hot key.
   * @default { minDelay: 10, jitter: 20 }
   */
  retry?: RetryOptions | RetryDelay;
  /**
   * Keep the lease alive while it is held (`{ interval }`), or `false` to let it end with its
   * TTL: the lease is then lost (`LockLostError`, reason `'expired'`) once its validity passes.
   * @default { interval: ttl / 3 }
   */
  renew?: false | RenewOptions;
  /**
   * What the stream of `withLock` and `using` does when the lease is lost.
   * @default 'error'
   */
  onLost?: OnLost;
  /**
   * Reentrancy. When `true`, an acquisition subscribed inside the work of a `withLock`/`using` of
   * the same locker that holds the same key — directly, or in anything that work started: nested
   * operators, `mergeMap` fan-out, timers, promises, a NestJS service called by a `@WithLock`
   * handler — joins that lease (same token and fence, no store call) instead of waiting for
   * itself, and the lock is given back only when the outermost stream ends. The context is Node's
   * `AsyncLocalStorage`, so code that runs on behalf of the locked work joins, and so does code
   * the work calls synchronously (a `Subject.next()` into another pipeline), as with a reentrant
   * lock in a thread. With `false`, this acquisition never joins another, and its own work's
   * acquisitions cannot join it (they wait for it, as before reentrancy). Options of a joining
   * acquisition (`ttl`, `renew`, …) are those of the lease it joins. See the README's "Reentrancy".
   *
   * Off by default because of what the context costs the whole process: once an
   * `AsyncLocalStorage` frame is entered, Node 20 tracks async context for every promise of the
   * process, not only the locker's (measured on this project's machine: a bare
   * `await Promise.resolve().then(…)` went from 78 to 265 ns; a lock + unlock pair on the
   * in-memory store from 3.9 to 4.8 µs of CPU). Turn it on for the locker
   * (`createLocker({ reentrant: true })`) or per call. Without it, a nested acquisition of a key
   * the enclosing work holds waits for it, and ends with `LockTimeoutError` at its `waitTimeout`.
   * @default false
   * @example
   * ```ts
   * // with createLocker({ reentrant: true }): a nested withLock on the same key joins the outer
   * // lease: no deadlock, one store lease
   * saveOrder(order).pipe(
   *   mergeMap(() => updateStock(order).pipe(locker.withLock(`order:${order.id}`))),
   *   locker.withLock(`order:${order.id}`),
   * ).subscribe();
   * // a lock that work started from inside must never share (a callback serving other streams):
   * events$.pipe(mergeMap((e) => apply(e).pipe(locker.withLock(e.key, { reentrant: false }))));
   * ```
   */
  reentrant?: boolean;
}

/**
 * What `withLock` and `using` do when the lock is held by someone else:
 * - `'wait'`: wait for it up to `waitTimeout`, then error with `LockTimeoutError`;
 * - `'skip'`: try once (no waiting, no retry) and, if it is held, complete without a value and
 *   without running the work: for a scheduled job that must run on one instance only.
 *
 * A skip is not a failure: it is reported on `events$` as a `timed-out` event with
 * `skipped: true`. A store failure still errors (`LockStoreError`): "could not tell" is not "busy".
 *
 * @example
 * ```ts
 * const onBusy: OnBusy = 'skip';
 * cleanup$.pipe(locker.withLock('job:cleanup', { onBusy })).subscribe(); // empty if another instance runs it
 * ```
 */
export type OnBusy = 'wait' | 'skip';

/**
 * Options of `withLock` and `using` (the operators that run work under the lock): an acquisition's
 * options plus what to do when the lock is busy.
 *
 * @example
 * ```ts
 * const options: LockOperatorOptions = { ttl: 60_000, waitTimeout: 0, onBusy: 'skip' };
 * nightlyCleanup$.pipe(locker.withLock('job:cleanup', options)).subscribe(); // one instance runs it, the others skip
 * ```
 */
export interface LockOperatorOptions extends AcquireOptions {
  /**
   * `'skip'` tries once and completes empty when the lock is held elsewhere; `'wait'` waits up to
   * `waitTimeout`. With `'skip'`, `waitTimeout` must be left out (or `0`).
   * @default 'wait'
   * @example
   * ```ts
   * import { interval, exhaustMap } from 'rxjs';
   * // every minute, one instance of the service sends the digest; the others skip that minute
   * interval(60_000).pipe(
   *   exhaustMap(() => sendDigest$.pipe(locker.withLock('job:digest', { onBusy: 'skip' }))),
   * ).subscribe();
   * ```
   */
  onBusy?: OnBusy;
}

/**
 * Bounds of the cohort hand-off (see {@link LockerOptions.cohort}).
 *
 * @example
 * ```ts
 * // hand the hot key between local waiters for at most 5 ms or 32 passes per store grant
 * const locker = createLocker({ store, cohort: { maxPasses: 32, maxMs: 5, roundMs: 10, batchMs: 20 } });
 * ```
 */
export interface CohortOptions {
  /**
   * Most local hand-offs per store acquisition (an integer from 0 to 1023). A store grant reserves
   * a fence for each of them, so this also bounds how many fences one grant can burn.
   * @default 256
   */
  maxPasses?: number;
  /**
   * Longest time from the store grant after which no more local hand-offs are made, in ms (an
   * integer from 0 to 2147483647) — but to the waiters already in line at the grant, which
   * `batchMs` bounds. 0 turns hand-offs off.
   * @default 12
   */
  maxMs?: number;
  /**
   * About how long the store's line of waiting processes should take to go round once, in ms (an
   * integer from 0 to 2147483647): a turn lasts at most `roundMs / (waiting + 1)`.
   * @default 24
   */
  roundMs?: number;
  /**
   * How long after the store grant the local waiters that were already in line at the grant still
   * each get the lock once, in ms (an integer from 0 to 2147483647; never less than `maxMs`). On a
   * loaded machine short holds stretch (a 1 ms timer fires after several ms); a turn cut at `maxMs`
   * before its batch is served makes the waiters left out wait a whole further round of the store's
   * line. This bounds how long one process's batch can keep the others waiting.
   * @default 48
   */
  batchMs?: number;
}

/**
 * Options of {@link createLocker}.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLocker, type LockerOptions } from 'rxjs-lock';
 * import { RedisLockStore } from 'rxjs-lock/redis';
 *
 * const options: LockerOptions = { store: new RedisLockStore(new Redis()), keyPrefix: 'billing:lock:', ttl: 15_000, commandTimeout: 500 };
 * const locker = createLocker(options);
 * ```
 */
export interface LockerOptions extends AcquireOptions {
  /**
   * Where locks live. Use `RedisLockStore` (from `rxjs-lock/redis`) to exclude across processes.
   * @default a new MemoryLockStore (exclusion within this process only)
   */
  store?: LockStore;
  /**
   * Longest wait for any single store call, in ms (an integer from 1 to 2147483647). A call that
   * takes longer fails with `LockStoreError`; if a timed-out acquire later succeeds on the
   * store, the lock is released at once.
   * @default 2000
   */
  commandTimeout?: number;
  /**
   * Prepended to every key before it reaches the store (a string of at most 1024 characters).
   * @default 'lock:'
   */
  keyPrefix?: string;
  /**
   * Source of randomness for the back-off jitter, returning numbers in `[0, 1)`.
   * @default Math.random
   */
  random?: () => number;
  /**
   * Queue this locker's waiters for the same key in a local line, so that only the first talks to
   * the store (seed 000's local hot-spot lock: on a hot key the others cost the store nothing) and
   * they get the key in arrival order. `false` makes every acquisition poll the store on its own,
   * as lock libraries commonly do (for comparisons).
   * @default true
   */
  localGate?: boolean;
  /**
   * Cohort hand-off: while this process holds a key and has local waiters for it, the lock passes
   * from one local holder to the next without a store round trip (each with a higher fence, the
   * same lease and renewal): every local waiter that was in line at the store grant gets it once
   * (while the turn is younger than `batchMs`), and further passes go on for a turn of `maxMs`
   * since the grant — never more than `maxPasses` passes; then it goes back to the store, which
   * hands it to the next process in line. When the store says how many other processes wait in
   * line (the Redis store does), the turn after the batch is cut to `roundMs / (waiting + 1)`, so
   * the line goes round in about `roundMs`: two processes in line take turns of 12 ms, eight of
   * 3 ms. `false` always goes through the store.
   * @default { maxPasses: 256, maxMs: 12, roundMs: 24, batchMs: 48 }
   */
  cohort?: false | CohortOptions;
  /**
   * After how long a wait an acquisition is reported as a `long-wait` event on `events$` (and
   * again every as long while it still waits), in ms: an integer from 1 to 2147483647, or
   * `Infinity` for never. Each report reads the key from the store once (who holds it, its TTL,
   * how long the read took: see `LongWaitEvent`). Nothing is read or reported while nobody listens
   * to `events$`. Mutex waits (`withLock`, `using`, `acquire`, each key of `withLocks`) report the
   * holder; semaphore and read-write waits (`withPermit`, `withReadLock`, `withWriteLock`) report
   * the lock's `permits` (in use, holders, waiters).
   * @default 5000
   * @example
   * ```ts
   * const locker = createLocker({ store, longWait: 2_000 });
   * locker.events$.subscribe((e) => {
   *   if (e.type === 'long-wait') console.warn(`${e.key}: waited ${e.waitedMs} ms, holder ${e.holder?.token ?? 'unknown'}`);
   * });
   * ```
   */
  longWait?: number;
  /**
   * Lock-delay (Chubby's), in ms (an integer from 0 to 2147483647; `0` turns it off): a key whose
   * holder was lost — its lease lapsed (not renewed in time: the process stalled, or the store was
   * unreachable) rather than released — stays unavailable for `lockDelay` ms more, so a holder that
   * stalled gets time to notice, and the requests it had in flight time to land, before the next
   * holder starts. A release frees the key at once, as without it.
   *
   * Mutexes, semaphores and read-write locks alike. How: every TTL this locker sends the store
   * (grant, renewal, `extend`) is `ttl + lockDelay` (capped at 2147483647), while each lease's
   * deadline is still counted from `ttl`; so the key outlives its holder's deadline by
   * `lockDelay`. A lease that was lost (`'expired'`, `'store-unreachable'`) is not given back to
   * the store when its stream ends: its key lapses by itself. `lease.ttl` stays `ttl`; `inspect()`
   * shows the key's real remaining TTL, delay included. Limits: a key handed over from a store's
   * line (the Redis store) is granted for at most its place TTL (`placeTtl`, 3 s), so until its
   * holder's first renewal it is kept only as long as that grant reaches past the deadline; on a
   * `RedlockStore` the validity it measures is shortened by `lockDelay` (when that leaves nothing,
   * about `lockDelay ≥ 99 × ttl`, the lease counts on `ttl` alone, as on one Redis). Fencing
   * tokens remain the guarantee; lock-delay narrows the window for resources that cannot check
   * them.
   * @default 0
   * @example
   * ```ts
   * // a holder that stops renewing keeps the key blocked 5 s past its lease's deadline
   * const locker = createLocker({ store, ttl: 10_000, lockDelay: 5_000 });
   * ```
   */
  lockDelay?: number;
  /**
   * Scheduler for back-off timers and wait-limit measurement. Pass a `TestScheduler` to run
   * the waiting on a virtual clock.
   * @default asyncScheduler (and `performance.now()` as the clock)
   */
  scheduler?: SchedulerLike;
}

/**
 * Defaults of {@link LockerOptions}.
 *
 * @example
 * ```ts
 * const locker = createLocker({ store, ttl: DEFAULTS.ttl * 2 }); // leases of 60 s instead of 30 s
 * ```
 */
export const DEFAULTS = Object.freeze({
  /** {@link LockerOptions.ttl}: 30 s. */
  ttl: 30_000,
  /** {@link LockerOptions.waitTimeout}: 10 s. */
  waitTimeout: 10_000,
  /** {@link LockerOptions.retry}: sleeps drawn from [10, 30) ms. */
  retry: Object.freeze({
    /** {@link RetryOptions.minDelay}. */
    minDelay: 10,
    /** {@link RetryOptions.jitter}. */
    jitter: 20,
  }),
  /** {@link LockerOptions.renew}: renew every `ttl / 3`. */
  renew: Object.freeze({}) as RenewOptions,
  /** {@link LockerOptions.onLost}. */
  onLost: 'error' as OnLost,
  /** {@link LockerOptions.reentrant}. */
  reentrant: false,
  /** {@link LockerOptions.commandTimeout}: 2 s. */
  commandTimeout: 2_000,
  /** {@link LockerOptions.keyPrefix}. */
  keyPrefix: 'lock:',
  /** {@link LockerOptions.localGate}. */
  localGate: true,
  /** {@link LockerOptions.longWait}. */
  longWait: 5_000,
  /** {@link LockerOptions.cohort}. */
  cohort: Object.freeze({
    /** {@link CohortOptions.maxPasses}. */
    maxPasses: 256,
    /** {@link CohortOptions.maxMs}. */
    maxMs: 12,
    /** {@link CohortOptions.roundMs}. */
    roundMs: 24,
    /** {@link CohortOptions.batchMs}. */
    batchMs: 48,
  }),
  /** {@link LockerOptions.lockDelay}: off. */
  lockDelay: 0,
});
