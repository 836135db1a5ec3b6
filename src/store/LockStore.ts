/**
 * The core contract between the lock engine and a backend: three atomic operations on one key and
 * a token. A store knows nothing of Observables, waiting, retries, renewal schedules or local
 * hand-offs; the engine builds all of that on these three, so a store that implements only them
 * (a quorum of Redis masters, a database advisory lock) gets every operator, renewal, loss
 * detection, the local gate and events. What a store may offer beyond them (a line of waiters with
 * direct hand-off, wake-up signals, batched extension, key checks, close) is in ./capabilities.ts.
 *
 * Keys reach the store already prefixed. Tokens are unique per store session (the engine's UUIDs).
 * Every operation is atomic with respect to every other operation on the same key, and a key whose
 * TTL has passed behaves as absent.
 *
 * @example
 * ```ts
 * const store: LockStore = new MemoryLockStore();
 * const grant = await store.tryAcquire('lock:report', 'token-1', 5_000);
 * if (grant.acquired) {
 *   await store.extend('lock:report', 'token-1', 5_000); // 'extended'
 *   await store.release('lock:report', 'token-1'); // true
 * }
 * ```
 */
export interface LockStore {
  /**
   * Set `key` to `token` with a time-to-live of `ttlMs` if the key is absent (or expired), and in
   * the same atomic step issue fencing tokens for it. Resolves `{ acquired: true, fence }` when
   * this call set it — or when `token` holds it already (a call sent twice: the first run took it;
   * then with the `ttl` it has left and new fences) — and `{ acquired: false }` when another token
   * holds it. Rejects only when the store failed.
   *
   * Fences: the grant reserves consecutive integers `fence … fence + n − 1`, every one of them
   * greater than every fence the store issued or reserved for `key` before, whichever client asked
   * — also after the store lost its data, if it can lose data. `n` is `fences` (1 when omitted) or
   * fewer, never less than 1; when fewer, the answer says how many (`Acquired.fences`). (The engine
   * hands the extra ones to local successors; what they mean is the engine's business, see
   * engine/fencing.) All fences are safe integers.
   */
  tryAcquire(key: string, token: string, ttlMs: number, fences?: number): Promise<AcquireResult>;

  /**
   * Reset the time-to-live of `key` to `ttlMs` only if it still holds `token`. Resolves
   * `'extended'`, `'gone'` when the key was absent (expired or deleted) or `'taken'` when another
   * token holds it.
   */
  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome>;

  /**
   * Give `key` up only if it still holds `token` (delete it, or, in a store with a line, hand it
   * to the first live waiter). Resolves `true` when our key was given up, `false` when the key was
   * absent or held by another token.
   *
   * `grant`: the grant being given up, when the caller knows it — its fences as the store answered
   * them, and when that answer reached the caller. A store that does not record every grant's
   * fences when it makes it needs this to keep the next grant's fences above them (the Redis store
   * records them only at a release that comes before its clock has passed them); without it, such
   * a store assumes the most a grant can have reserved. A store that records every grant ignores
   * it. Its first fence and answer time must be what the store answered (an earlier answer time
   * can make the next grant's fences overlap the block); its count may be fewer than the store
   * reserved, down to the fences that holders were given: a fence nobody was given protects
   * nothing, so the next grant need only start above the last one given.
   */
  release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean>;
}

/**
 * The grant a release gives up, as its holder knows it (see {@link LockStore.release}).
 *
 * @example
 * ```ts
 * // a custom store's release: the grant says which fences its holder was given
 * class PgLockStore implements LockStore {
 *   async release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
 *     const lastFence = grant === undefined ? undefined : grant.fence + grant.fences - 1;
 *     return this.db.deleteIfOwner(key, token, lastFence); // keeps the next grant's fences above lastFence
 *   }
 *   // … tryAcquire, extend …
 * }
 * ```
 */
export interface ReleasedGrant {
  /** The first fence the grant reserved. */
  readonly fence: number;
  /**
   * How many fences, from `fence` on, holders were given (at least 1: the grant's own holder;
   * at most what the store reserved).
   */
  readonly fences: number;
  /** `performance.now()` at, or after, the moment the grant's answer reached the caller. */
  readonly answeredAt: number;
}

/**
 * Outcome of {@link LockStore.tryAcquire}.
 *
 * @example
 * ```ts
 * const result: AcquireResult = await store.tryAcquire('lock:report', 'token-1', 5_000);
 * if (result.acquired) console.log('fence', result.fence);
 * else console.log('held by another token for', result.holderTtl ?? 'unknown', 'ms');
 * ```
 */
export type AcquireResult = Acquired | NotAcquired;

/**
 * The store granted the key: {@link AcquireResult} of a successful {@link LockStore.tryAcquire}.
 *
 * @example
 * ```ts
 * const result = await store.tryAcquire('lock:report', 'token-1', 5_000, 4);
 * if (result.acquired) {
 *   const granted: Acquired = result;
 *   console.log(`fences ${granted.fence} to ${granted.fence + (granted.fences ?? 4) - 1}`);
 * }
 * ```
 */
export interface Acquired {
  /** Always `true`: the key is now the caller's. */
  readonly acquired: true;
  /** The first of the fences reserved by this grant. */
  readonly fence: number;
  /**
   * How many fences the grant reserved, when not the number asked for: fewer (a store may hand out
   * fewer), or what its place in line asked for when a queueing store handed the key over earlier.
   */
  readonly fences?: number;
  /**
   * The TTL the key has, when it is not the one asked for: a key a queueing store handed to this
   * token earlier, whose remaining TTL this is (the holder then extends it to its own TTL).
   */
  readonly ttl?: number;
  /**
   * How many other waiters were in the store's line at the grant, when the store keeps one. A
   * store without a line may answer 1 when other acquisitions were refused the key lately (the
   * in-memory and quorum stores: within 100 ms): the locker then lets them go first when it gives
   * the key back, instead of asking again at once.
   */
  readonly waiting?: number;
  /**
   * How long the lock stays safe, in ms, when the store measured it itself and it can be shorter
   * than the caller's own margin gives (a quorum store: the TTL, less the time the attempt took,
   * less its clock-drift allowance). The key's TTL is still the one asked for (or `ttl`): no
   * extension is needed. The caller counts it from the moment it sent the call, before the store
   * started measuring, so its deadline comes no later than the store's.
   */
  readonly validity?: number;
}

/**
 * The key is held by someone else: {@link AcquireResult} of a {@link LockStore.tryAcquire} that did not get it.
 *
 * @example
 * ```ts
 * const result = await store.tryAcquire('lock:report', 'token-2', 5_000);
 * if (!result.acquired) {
 *   const busy: NotAcquired = result;
 *   await sleep(Math.min(busy.holderTtl ?? 50, 50)); // no use sleeping past the holder's TTL
 * }
 * ```
 */
export interface NotAcquired {
  /** Always `false`: the key is held by someone else. */
  readonly acquired: false;
  /** Remaining TTL of the holder's key in ms, when known: no use sleeping past it. */
  readonly holderTtl?: number;
  /** The store keeps the caller's place in line (see QueueingStore). */
  readonly queued?: boolean;
  /** With `queued`: how long the place lasts unless the caller asks again, in ms. */
  readonly placeTtl?: number;
  /**
   * With `queued`, when the store can say: a reading of the store's clock at that moment,
   * comparable with the `at` of its wake-up signals (see capabilities.ts): a hand-off dated before
   * it had lapsed by the time this attempt ran.
   */
  readonly at?: number;
}

/**
 * Outcome of {@link LockStore.extend}: extended, key absent, or key held by another token.
 *
 * @example
 * ```ts
 * const outcome: ExtendOutcome = await store.extend('lock:report', 'token-1', 5_000);
 * if (outcome !== 'extended') log.warn(`lease on lock:report is ${outcome === 'gone' ? 'expired' : 'taken by another token'}`);
 * ```
 */
export type ExtendOutcome = 'extended' | 'gone' | 'taken';

/** Shared, frozen result so the hot path allocates nothing when a key is busy. */
export const NOT_ACQUIRED: NotAcquired = Object.freeze({ acquired: false });
