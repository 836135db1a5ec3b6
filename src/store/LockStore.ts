/**
 * The contract between the lock engine and a backend. A store knows nothing of Observables,
 * waiting or retries: it offers atomic single-key operations on (key, token) pairs: set-if-absent
 * with a TTL, compare-and-delete, and owner-checked extension. The engine polls `tryAcquire`
 * (a "pull-mode" lock: waiters ask again rather than being told).
 *
 * Keys reach the store already prefixed. Tokens are unique per acquisition. Every operation is
 * atomic with respect to every other operation on the same key, and a key whose TTL has passed
 * behaves as absent.
 */
export interface LockStore {
  /**
   * Set `key` to `token` with a time-to-live of `ttlMs` if the key is absent (or expired).
   * Resolves `{ acquired: true }` when this call set it, `{ acquired: false }` when another
   * token holds it. Rejects only when the store failed.
   */
  tryAcquire(key: string, token: string, ttlMs: number): Promise<AcquireResult>;

  /**
   * Delete `key` only if it still holds `token`. Resolves `true` when it was deleted, `false`
   * when the key was absent or held by another token.
   */
  release(key: string, token: string): Promise<boolean>;

  /**
   * Reset the time-to-live of `key` to `ttlMs` only if it still holds `token`. Resolves `true`
   * when extended, `false` when the key was absent or held by another token.
   */
  extend(key: string, token: string, ttlMs: number): Promise<boolean>;
}

/** Outcome of {@link LockStore.tryAcquire}. */
export interface AcquireResult {
  /** True when this call took the key. */
  readonly acquired: boolean;
}

/** Shared, frozen results so the hot path allocates nothing. */
export const ACQUIRED: AcquireResult = Object.freeze({ acquired: true });
export const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });
