/**
 * An optional capability: locks held by several holders at once, up to a capacity — what counting
 * semaphores and read-write locks are built on. A key has holders, each with a weight (the permits
 * it holds) and a lease of its own (its own token and expiry); the key has a line of waiters, served
 * strictly first come, first served (head of line): a waiter is granted only once every waiter
 * ahead of it was granted, and only when its weight fits — `used + weight ≤ capacity`, with the
 * capacity the waiter itself asked for.
 *
 * A semaphore is `capacity = limit`, `weight = permits`. A read-write lock is readers of weight 1
 * and writers of weight `capacity` (exclusive): since the line is FIFO with head-of-line blocking,
 * once a writer waits, readers that come later queue behind it, and a waiter asking for several
 * permits is never overtaken by single-permit waiters.
 *
 * Capacity per request, not per key: when callers ask for different capacities (a changed
 * `limit`), each grant is decided by the capacity its own request names; holders keep what they
 * hold (nothing is revoked), so a lower limit only makes new grants wait until enough holders left.
 *
 * Keys (already prefixed) name shared locks apart from the mutexes of {@link LockStore}: a store
 * keeps them in structures of their own, so `tryAcquire('k')` and `tryAcquireShared('k')` never
 * exclude each other. Expired holders and lapsed places are swept by the store itself, so a holder
 * or waiter that died never keeps capacity beyond its TTL (or its place's).
 */
import type { ExtendRequest } from './capabilities.js';
import type { AcquireResult, ExtendOutcome } from './LockStore.js';

/**
 * Place handling of {@link SharedLockStore.tryAcquireShared}, as for a mutex's line.
 *
 * @example
 * ```ts
 * const place: SharedPlace = lastAttempt ? 'leave' : 'keep'; // the last attempt gives its place up
 * const grant = await store.tryAcquireShared('lock:renderer', token, 30_000, 1, 4, place);
 * ```
 */
export type SharedPlace = 'keep' | 'leave';

/**
 * The shared-lock capability of a store (see this file's top comment): `weight` permits out of a
 * `capacity`, per holder, with a first-come, first-served line.
 *
 * @example
 * ```ts
 * const store = new MemoryLockStore();
 * const grant = await store.tryAcquireShared('lock:renderer', 'token-1', 30_000, 1, 4, 'keep');
 * if (grant.acquired) await store.releaseShared('lock:renderer', 'token-1');
 * ```
 */
export interface SharedLockStore {
  /**
   * Asks for `weight` of `capacity` on `key` for `token`, with a lease of `ttlMs`:
   * - `token` holds permits of `key` already (a waiter's place was granted by another caller's
   *   release, or a call was sent twice): answers `{ acquired: true, fence, ttl }` with that grant's
   *   fence and the TTL it has left;
   * - nobody waits ahead of `token` (the line is empty, or `token` is first) and the weight fits:
   *   grants it, with a new fence, and takes `token` out of the line;
   * - otherwise, with `place: 'keep'`, takes or refreshes `token`'s place in line (arrival order is
   *   kept; the place remembers this call's `ttlMs`, `weight` and `capacity`) and answers
   *   `{ acquired: false, queued: true, placeTtl, holderTtl }` (and `at`, the store's clock, when
   *   it has wake-up signals: a `'granted'` signal dated after it is of a grant made after this
   *   call, which the waiter may hold without asking again); with `place: 'leave'` (the caller's
   *   last attempt) gives the place up in the same atomic step.
   *
   * `holderTtl` is the time until the first holder's lease ends, when there is a holder: no use
   * sleeping past it, since an expired holder frees its permits without a release. A place lapses
   * `placeTtl` ms after the call that last refreshed it. The store also grants the waiters at the
   * head of the line whose weights fit, whenever capacity frees up (a release, an expiry it sweeps,
   * a waiter leaving); such a grant lasts `min(placeTtl, ttlMs)` counted from the waiter's last
   * call at most, so a waiter that died holds nothing for longer. Fences: every grant reserves
   * consecutive fences greater than every fence issued for `key` before, across holders (see
   * {@link LockStore}): `fences` of them (1 when omitted; a grant from the line reserves what the
   * place's last call asked for), or fewer — never less than 1 — and the answer says how many
   * (`Acquired.fences`; a store that reserves only one may leave it out). The engine hands the
   * extra ones to local successors of the holder (a semaphore's permits passed on in-process).
   * Rejects only when the store failed (or for an invalid argument).
   */
  tryAcquireShared(key: string, token: string, ttlMs: number, weight: number, capacity: number, place: SharedPlace, fences?: number): Promise<AcquireResult>;

  /**
   * Resets the TTL of `token`'s permits of `key` to `ttlMs`, if it still holds them: `'extended'`,
   * or `'gone'` (expired, released, or lost with the store's data). Never `'taken'`: permits are
   * a token's own.
   */
  extendShared(key: string, token: string, ttlMs: number): Promise<ExtendOutcome>;

  /**
   * Gives `token`'s permits of `key` back, and grants the waiters at the head of the line that now
   * fit. Resolves `true` when `token` held them, `false` when it did not (expired or released).
   */
  releaseShared(key: string, token: string): Promise<boolean>;

  /**
   * `token` stopped waiting: gives up its place in line and, in the same step, permits that were
   * granted to it meanwhile (then waking the next waiters). Resolves `true` when it gave up permits.
   */
  leaveShared(key: string, token: string): Promise<boolean>;
}

/**
 * A shared lock's holders and line, as {@link InspectableSharedStore.inspectShared} sees them.
 *
 * @example
 * ```ts
 * const info: SharedLockInfo | null = await store.inspectShared('lock:renderer');
 * if (info !== null) console.log(`${info.used} permits held by ${info.holders.length}; ${info.waiting} waiting`);
 * ```
 */
export interface SharedLockInfo {
  /** Permits held now by live holders (the sum of their weights). */
  readonly used: number;
  /** Live holders, each with its token, weight (the permits it holds), fence and remaining TTL (ms), first to expire first. */
  readonly holders: ReadonlyArray<SharedHolderInfo>;
  /** Waiters in line whose places have not lapsed. */
  readonly waiting: number;
}

/**
 * One holder of a shared lock, in {@link SharedLockInfo.holders}.
 *
 * @example
 * ```ts
 * const info = await store.inspectShared('lock:renderer');
 * for (const holder of info?.holders ?? []) {
 *   const h: SharedHolderInfo = holder;
 *   console.log(`${h.token} holds ${h.weight} permit(s), fence ${h.fence}, ${h.ttl} ms left`);
 * }
 * ```
 */
export interface SharedHolderInfo {
  /** The holder's token (one per acquisition: its lease's `token`). */
  readonly token: string;
  /** The permits it holds (a read-write lock's reader 1, its writer all of them). */
  readonly weight: number;
  /** Its grant's fence. */
  readonly fence: number;
  /** The remaining TTL of its lease, in ms. */
  readonly ttl: number;
}

/**
 * A {@link SharedLockStore} that can also describe a key's holders and line (optional; the
 * in-memory and Redis stores have it).
 *
 * @example
 * ```ts
 * const store = new MemoryLockStore();
 * await store.tryAcquireShared('lock:renderer', 'some-token', 5_000, 1, 4, 'keep');
 * console.log(await store.inspectShared('lock:renderer'));
 * // { used: 1, holders: [{ token: 'some-token', weight: 1, fence: 1, ttl: 5000 }], waiting: 0 }
 * ```
 */
export interface InspectableSharedStore {
  /**
   * The shared lock `key` (already prefixed) as the store holds it now, or `null` when it has
   * neither a live holder nor a live waiter. Read-only: no holder or place is swept, granted or
   * refreshed (so a waiter that would fit is still counted as waiting until a call grants it).
   */
  inspectShared(key: string): Promise<SharedLockInfo | null>;
}

/**
 * Extension of many shared holders in one round trip, used by lease renewal (optional; the
 * in-memory and Redis stores have it): {@link BatchExtendStore} for {@link SharedLockStore.extendShared}.
 *
 * @example
 * ```ts
 * const outcomes = await store.extendSharedMany([
 *   { key: 'lock:renderer', token: tokenA, ttlMs: 30_000 },
 *   { key: 'lock:config', token: tokenB, ttlMs: 30_000 },
 * ]); // e.g. ['extended', 'gone']
 * ```
 */
export interface BatchExtendSharedStore {
  /**
   * {@link SharedLockStore.extendShared} for each request, answered in order: its outcome, or the
   * Error of that one request (the others' outcomes still count). Rejects when the batch as a
   * whole failed.
   */
  extendSharedMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>>;
}

const has = (store: object, name: string): boolean => typeof (store as Record<string, unknown>)[name] === 'function';

/** The store's shared locks, or `undefined` when it has none (a quorum store, a core-only store). */
export function sharedOf<S extends object>(store: S): (S & SharedLockStore) | undefined {
  return has(store, 'tryAcquireShared') && has(store, 'extendShared') && has(store, 'releaseShared') && has(store, 'leaveShared')
    ? (store as S & SharedLockStore)
    : undefined;
}

/** The store's `inspectShared`, or `undefined`. */
export function sharedInspectorOf<S extends object>(store: S): (S & InspectableSharedStore) | undefined {
  return has(store, 'inspectShared') ? (store as S & InspectableSharedStore) : undefined;
}

/** The store's `extendSharedMany`, or `undefined`. */
export function batchExtendSharedOf<S extends object>(store: S): (S & BatchExtendSharedStore) | undefined {
  return has(store, 'extendSharedMany') ? (store as S & BatchExtendSharedStore) : undefined;
}
