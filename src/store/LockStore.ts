/**
 * The contract between the lock engine and a backend. A store knows nothing of Observables,
 * waiting or retries: it offers atomic single-key operations on (key, token) pairs: set-if-absent
 * with a TTL that also issues a fencing token, compare-and-delete, and owner-checked extension.
 * The engine polls `tryAcquire` (a "pull-mode" lock: waiters ask again rather than being told).
 *
 * Keys reach the store already prefixed. Tokens are unique per acquisition. Every operation is
 * atomic with respect to every other operation on the same key, and a key whose TTL has passed
 * behaves as absent.
 */
export interface LockStore {
  /**
   * Set `key` to `token` with a time-to-live of `ttlMs` if the key is absent (or expired), and in
   * the same atomic step issue a fencing token for it. Resolves `{ acquired: true, fence }` when
   * this call set it, `{ acquired: false }` when another token holds it. Rejects only when the
   * store failed.
   *
   * `fence` is an integer that is strictly greater than every fence this store issued for `key`
   * before, whichever client asked.
   */
  tryAcquire(key: string, token: string, ttlMs: number): Promise<AcquireResult>;

  /**
   * Delete `key` only if it still holds `token`. Resolves `true` when it was deleted, `false`
   * when the key was absent or held by another token.
   */
  release(key: string, token: string): Promise<boolean>;

  /**
   * Reset the time-to-live of `key` to `ttlMs` only if it still holds `token`. Resolves
   * `'extended'`, `'gone'` when the key was absent (expired or deleted) or `'taken'` when another
   * token holds it.
   */
  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome>;

  /**
   * Optional batch form of {@link LockStore.extend}, used by lease renewal so that many held
   * leases share round trips: resolves one outcome per request, in order. Rejects when the batch
   * as a whole failed. Without it, the engine calls `extend` once per lease.
   */
  extendMany?(requests: readonly ExtendRequest[]): Promise<ExtendOutcome[]>;

  /**
   * Optional check of a (prefixed) key before anything is sent, for keys this store cannot keep
   * (a Redis key whose helper keys could not share its Cluster hash slot, say). Throws
   * `LockOptionsError`.
   */
  checkKey?(key: string): void;
}

/** Outcome of {@link LockStore.tryAcquire}. */
export type AcquireResult = Acquired | NotAcquired;

export interface Acquired {
  readonly acquired: true;
  /** The fencing token of this acquisition. */
  readonly fence: number;
}

export interface NotAcquired {
  readonly acquired: false;
}

/** Outcome of {@link LockStore.extend}: extended, key absent, or key held by another token. */
export type ExtendOutcome = 'extended' | 'gone' | 'taken';

/** One lease to extend in {@link LockStore.extendMany}. */
export interface ExtendRequest {
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
}

/** Shared, frozen result so the hot path allocates nothing when a key is busy. */
export const NOT_ACQUIRED: NotAcquired = Object.freeze({ acquired: false });
