/**
 * What a store may offer beyond the core {@link LockStore} contract, each as its own interface,
 * detected at run time by the functions below. The engine uses a capability when the store has
 * it and does without otherwise: every one of them only saves round trips or waiting time, none is
 * needed for exclusion.
 */
import type { AcquireResult, ExtendOutcome, LockStore } from './LockStore.js';

/**
 * A line of waiters per key with direct hand-off: a release with waiters in line does not free the
 * key but hands it to the first live waiter (a new fence, a TTL of its own), so a hot key goes
 * round the processes in arrival order.
 *
 * @example
 * ```ts
 * const store: LockStore & QueueingStore = new RedisLockStore(redis);
 * const answer = await store.tryAcquireInLine('lock:hot', 'token-1', 5_000, 1, 'keep');
 * if (!answer.acquired && answer.queued) {
 *   // waiting in line: a release hands the key to token-1; giving up the place instead:
 *   const left = await store.leave('lock:hot', 'token-1');
 *   if (left.granted) await store.release('lock:hot', 'token-1'); // handed over meanwhile
 * }
 * ```
 */
export interface QueueingStore {
  /**
   * {@link LockStore.tryAcquire}, for a caller that waits in line:
   * - the key is `token`'s already (a release handed it over while it waited): answers
   *   `{ acquired: true, fence, ttl }` with the fence of that grant and the TTL the key has left;
   * - the key is free and `token` is first in line (or the line is empty): takes it;
   * - otherwise, with `place: 'keep'`, takes or refreshes `token`'s place in line (arrival order
   *   is kept) and answers `{ acquired: false, queued: true, placeTtl }`; with `place: 'leave'`
   *   (the caller's last attempt) it gives the place up in the same atomic step.
   *
   * A place lapses `placeTtl` ms after the last call that refreshed it; `fences` and `ttlMs` of
   * that call are what a hand-off to `token` reserves and grants. A key handed to `token` has a
   * TTL of at least `min(placeTtl, ttlMs)` counted from the moment that call was sent, and at most
   * `ttlMs` from the hand-off, so a waiter that died blocks the key no longer than either.
   */
  tryAcquireInLine(key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave'): Promise<AcquireResult>;

  /**
   * `token` stopped waiting: give up its place at once. Must execute in the order it was sent with
   * respect to the caller's other calls and never be re-sent later (a Redis store uses no script
   * for it, which a flushed script cache could delay); the engine sends it only once the caller's
   * previous attempt was answered. Resolves `{ granted: true, … }` when the key had been handed to
   * `token` meanwhile: the caller then holds it (with `ttl` ms left) and must release it.
   */
  leave(key: string, token: string): Promise<LeaveResult>;
}

/**
 * Outcome of {@link QueueingStore.leave}.
 *
 * @example
 * ```ts
 * const left: LeaveResult = await store.leave('lock:hot', 'token-1');
 * if (left.granted) await store.release('lock:hot', 'token-1', { fence: left.fence, fences: left.fences, answeredAt: performance.now() });
 * ```
 */
export type LeaveResult =
  | { readonly granted: false }
  /** The key is `token`'s: its fences start at `fence` (`fences` of them), and it has `ttl` ms left. */
  | { readonly granted: true; readonly fence: number; readonly fences: number; readonly ttl: number };

/**
 * Wake-up signals for waiters in a {@link QueueingStore}'s line; on a store without a line, hints
 * that a key a waiter was refused is free again (`'freed'`), so that it asks at once instead of at
 * the end of its back-off step.
 *
 * @example
 * ```ts
 * const store: LockStore & QueueingStore & WakeUpStore = new RedisLockStore(redis);
 * const watch = store.watch('lock:hot', 'token-1', (signal) => {
 *   if (signal.type === 'granted') console.log('lock:hot is ours, fence', signal.fence);
 * });
 * await watch.ready;
 * await store.tryAcquireInLine('lock:hot', 'token-1', 5_000, 1, 'keep');
 * ```
 */
export interface WakeUpStore {
  /**
   * Calls `listener` when the store hands `key` to `token` (queued by `tryAcquireInLine`), and
   * when the signal channel is interrupted or resumes, until the watch is stopped. The engine
   * queues only while the watch is `active`, so a grant is not missed for lack of a listener; a
   * lost one costs a waiter one back-off step.
   */
  watch(key: string, token: string, listener: (signal: WakeSignal) => void): StoreWatch;
}

/**
 * What {@link WakeUpStore.watch} reports.
 *
 * @example
 * ```ts
 * const onSignal = (signal: WakeSignal): void => {
 *   switch (signal.type) {
 *     case 'granted': return grantArrived(signal.fence, signal.fences);
 *     case 'behind': return lookAgainIn(signal.ttl);
 *     case 'freed': return lookAgainIn(0); // a store without a line: a hint, not a grant
 *     case 'interrupted': return pollInstead();
 *     case 'resumed': return lookAgainIn(0); // grants made while it was down were not signalled
 *   }
 * };
 * ```
 */
export type WakeSignal =
  /**
   * The key was handed to `token`: `fences` fences from `fence` are its; `waiting` others are still
   * in line. `at`, when the store can say, reads the store's clock at the hand-off: signals travel
   * apart from call answers, so a signal can arrive after an attempt that ran later (and found the
   * key not `token`'s: the hand-off had lapsed); its `at` is then not after that attempt's.
   */
  | {
      readonly type: 'granted';
      readonly token: string;
      readonly fence: number;
      readonly fences: number;
      readonly waiting: number;
      readonly at?: number | undefined;
    }
  /**
   * The key was handed to the waiter ahead of `token`, whose grant ends within `ttl` ms: if that
   * waiter never claims it, `token` is next, so it should look again by then.
   */
  | { readonly type: 'behind'; readonly token: string; readonly ttl: number }
  /**
   * A store without a line: the key was given back while `token` was the acquisition refused it
   * last, so it may be free now. A hint, not a grant: whoever asks first takes the key.
   */
  | { readonly type: 'freed'; readonly token: string }
  /** The channel dropped (`active` is false now): grants may go unsignalled until it resumes. */
  | { readonly type: 'interrupted' }
  /** The channel is back (`active` again); grants made while it was down were not signalled. */
  | { readonly type: 'resumed' };

/**
 * A watch started by {@link WakeUpStore.watch}.
 *
 * @example
 * ```ts
 * const watch: StoreWatch = store.watch('lock:hot', 'token-1', onSignal);
 * await watch.ready; // from now on no grant to token-1 goes unsignalled while watch.active
 * // … wait in line …
 * watch.stop();
 * ```
 */
export interface StoreWatch {
  /** True while signals are flowing: a token queued now cannot miss its grant signal. */
  readonly active: boolean;
  /** Resolves when `active` first turns true (or never, if the store cannot deliver signals). */
  readonly ready: Promise<void>;
  /** Stops the listener. */
  stop(): void;
}

/**
 * Extension of many leases in one round trip, used by lease renewal.
 *
 * @example
 * ```ts
 * const store: LockStore & BatchExtendStore = new RedisLockStore(redis);
 * const outcomes = await store.extendMany([
 *   { key: 'lock:a', token: 'token-1', ttlMs: 30_000 },
 *   { key: 'lock:b', token: 'token-2', ttlMs: 30_000 },
 * ]); // e.g. ['extended', 'gone']: one round trip
 * ```
 */
export interface BatchExtendStore {
  /**
   * {@link LockStore.extend} for each request, answered in order: its outcome, or the Error of
   * that one request (the others' outcomes still count). Rejects when the batch as a whole failed.
   */
  extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>>;
}

/**
 * One lease to extend in {@link BatchExtendStore.extendMany}.
 *
 * @example
 * ```ts
 * const request: ExtendRequest = { key: 'lock:invoice:42', token: lease.token, ttlMs: 30_000 };
 * const [outcome] = await store.extendMany([request]);
 * ```
 */
export interface ExtendRequest {
  /** The lock's key in the store (with the locker's `keyPrefix`). */
  readonly key: string;
  /** The owner's token: only a key still holding it is extended. */
  readonly token: string;
  /** The new TTL, in ms from now. */
  readonly ttlMs: number;
}

/**
 * A check of a (prefixed) key before anything is sent, for keys this store cannot keep.
 *
 * @example
 * ```ts
 * // a custom store over a database whose key column holds 255 characters
 * class PgLockStore implements LockStore, KeyCheckingStore {
 *   checkKey(key: string): void {
 *     if (key.length > 255) throw new LockOptionsError('key', 'at most 255 characters with its prefix', key);
 *   }
 *   // … tryAcquire, extend, release …
 * }
 * ```
 */
export interface KeyCheckingStore {
  /** Throws `LockOptionsError` for a key the store cannot keep (naming the rule). */
  checkKey(key: string): void;
}

/**
 * A store holding resources of its own (timers, connections it opened).
 *
 * @example
 * ```ts
 * const store: LockStore & ClosableStore = new MemoryLockStore(); // its sweep timer
 * const locker = createLocker({ store });
 * // at shutdown: the locker first (it gives its locks back), then the store
 * await locker.close();
 * await store.close();
 * ```
 */
export interface ClosableStore {
  /** Frees them; the store's owner calls it once nothing uses the store any more. */
  close(): Promise<void> | void;
}

/**
 * Read-only answers about a key's lock, for operators and for `locker.isLocked` /
 * `locker.waitUntilFree` / `locker.inspect`: who holds it, for how long, and how many wait.
 *
 * @example
 * ```ts
 * const store = new MemoryLockStore();
 * await store.tryAcquire('lock:report', 'some-token', 5_000);
 * console.log(await store.inspect('lock:report')); // { token: 'some-token', ttl: 5000, fence: 1, waiting: 0 }
 * ```
 */
export interface InspectableStore {
  /**
   * What the store holds for `key` (already prefixed) right now, or `null` when it is free (absent
   * or expired). Changes nothing: no lock is taken, no place in line, no TTL touched.
   */
  inspect(key: string): Promise<LockInfo | null>;
}

/**
 * A held key, as {@link InspectableStore.inspect} sees it.
 *
 * @example
 * ```ts
 * const info: LockInfo | null = await store.inspect('lock:report');
 * if (info !== null) console.log(`${info.token} holds it for ${info.ttl} ms more; ${info.waiting} waiting`);
 * ```
 */
export interface LockInfo {
  /** The holder's token (its store session's UUID: the value the store keeps for the key). */
  readonly token: string;
  /** The key's remaining time-to-live in ms (0 when it expires this very millisecond). */
  readonly ttl: number;
  /**
   * The first fence of the holder's grant, when the store keeps it: the in-memory store always
   * does; the Redis store only for a key it handed to the holder from its line, while it keeps
   * the record of that hand-off (until the grantee's place would have lapsed: `placeTtl`, 3 s by
   * default, after the hand-off). An uncontended Redis grant keeps no fence beside the key — its
   * block is read off the server clock and given to the holder only (see the Redis store's
   * fences) — so the field is absent then, never a guess.
   */
  readonly fence?: number;
  /** Live waiters in the store's line for this key (0 for a store without a line). */
  readonly waiting: number;
}

const has = (store: object, name: string): boolean => typeof (store as Record<string, unknown>)[name] === 'function';

/** The store with its line, or `undefined` when it has none. */
export function queueingOf(store: LockStore): (LockStore & QueueingStore) | undefined {
  return has(store, 'tryAcquireInLine') && has(store, 'leave') ? (store as LockStore & QueueingStore) : undefined;
}

/** The store's wake-up for waiters in its line, or `undefined`. */
export function wakeUpOf(store: LockStore): (LockStore & QueueingStore & WakeUpStore) | undefined {
  return queueingOf(store) !== undefined && has(store, 'watch') ? (store as LockStore & QueueingStore & WakeUpStore) : undefined;
}

/** A store without a line that hints when a key is free (`WakeSignal` `'freed'`), or `undefined`. */
export function freedHintsOf(store: LockStore): (LockStore & WakeUpStore) | undefined {
  return queueingOf(store) === undefined && has(store, 'watch') ? (store as LockStore & WakeUpStore) : undefined;
}

export function batchExtendOf(store: LockStore): (LockStore & BatchExtendStore) | undefined {
  return has(store, 'extendMany') ? (store as LockStore & BatchExtendStore) : undefined;
}

export function keyCheckOf(store: LockStore): (LockStore & KeyCheckingStore) | undefined {
  return has(store, 'checkKey') ? (store as LockStore & KeyCheckingStore) : undefined;
}

/** The store's `inspect`, or `undefined`. */
export function inspectorOf(store: LockStore): (LockStore & InspectableStore) | undefined {
  return has(store, 'inspect') ? (store as LockStore & InspectableStore) : undefined;
}

export function closerOf(store: LockStore): (LockStore & ClosableStore) | undefined {
  return has(store, 'close') ? (store as LockStore & ClosableStore) : undefined;
}

/**
 * A view of `store` with its core operations only, every capability hidden: what a store that
 * implements nothing more looks like to the engine (the contract suite and the engine's tests run
 * on it, to show that the core is enough).
 *
 * @example
 * ```ts
 * // run your tests as a store with only tryAcquire / extend / release would see them
 * const locker = createLocker({ store: coreOnly(new MemoryLockStore()) });
 * ```
 */
export function coreOnly(store: LockStore): LockStore {
  return {
    tryAcquire: (key, token, ttlMs, fences) => store.tryAcquire(key, token, ttlMs, fences),
    extend: (key, token, ttlMs) => store.extend(key, token, ttlMs),
    release: (key, token, grant) => store.release(key, token, grant),
  };
}
