/**
 * The contract between the lock engine and a backend. A store knows nothing of Observables,
 * waiting or retries: it offers atomic single-key operations on (key, token) pairs: set-if-absent
 * with a TTL that also issues a fencing token, compare-and-delete, and owner-checked extension.
 * The engine asks `tryAcquire` again while it waits (a "pull-mode" lock); a store may also queue
 * waiters and hand the key straight to the next one on release, and tell waiters through `watch`
 * (push), which spares them most of those polls.
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
   * before, whichever client asked, and leaves room below the next one: the fences
   * `fence + 1 … fence + FENCE_STRIDE − 1` are the holder's to give to local successors that it
   * hands the key to without the store (the engine's cohort hand-off).
   *
   * With `queue` set (and `token` being watched, when the store has wake-up: see
   * {@link LockStore.watch}), a queueing store may answer `{ acquired: false, queued: true }`, keeping
   * `token`'s place in line (the same token asking again keeps the place and pushes its expiry
   * forward), and may later grant the key to `token` by itself (see {@link LockStore.watch}); a
   * later `tryAcquire` with that token then answers `{ acquired: true }` with the `ttl` the key
   * has left. A free key goes to the first live waiter in line, not to whoever asks first.
   */
  tryAcquire(key: string, token: string, ttlMs: number, queue?: boolean): Promise<AcquireResult>;

  /**
   * Delete `key` only if it still holds `token` — or, in a queueing store, hand it to the first
   * live waiter in line. Resolves `true` when our key was given up, `false` when the key was
   * absent or held by another token.
   */
  release(key: string, token: string): Promise<boolean>;

  /**
   * Optional, for queueing stores: give up `token`'s place in line (it stopped waiting). Resolves
   * `true` when the key had been granted to `token` meanwhile: the caller then holds it and must
   * release it.
   */
  leave?(key: string, token: string): Promise<boolean>;

  /**
   * Optional wake-up: calls `listener` when the store hands `key` to `token` (queued by
   * `tryAcquire`), until the watch is stopped. The engine queues only once the watch is `active`,
   * so a grant is not missed for lack of a listener; a lost one costs a waiter one back-off step.
   */
  watch?(key: string, token: string, listener: (signal: WakeSignal) => void): StoreWatch;

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
  /**
   * The TTL the key has, when it is not the one asked for: a key a queueing store granted to this
   * token earlier, whose remaining TTL this is (the holder then extends it to its own TTL).
   */
  readonly ttl?: number;
  /** How many other waiters were in the store's line at the grant, when the store keeps one. */
  readonly waiting?: number;
}

export interface NotAcquired {
  readonly acquired: false;
  /** Remaining TTL of the holder's key in ms, when known: no use sleeping past it. */
  readonly holderTtl?: number;
  /** The store keeps the caller's place in line and will grant the key (see `watch`). */
  readonly queued?: boolean;
  /** With `queued`: how long the place lasts unless the caller asks again, in ms. */
  readonly placeTtl?: number;
}

/** What {@link LockStore.watch} reports. */
export interface WakeSignal {
  /** The key was handed to `token`, with fencing token `fence`. */
  readonly type: 'granted';
  readonly token: string;
  readonly fence: number;
  /**
   * The granted key's TTL, counted from no earlier than the grantee's last `tryAcquire` that
   * answered "queued": the grantee's validity starts from that call's send time.
   */
  readonly ttl: number;
  /** How many other waiters were still in line at the grant. */
  readonly waiting?: number;
}

/** A watch started by {@link LockStore.watch}. */
export interface StoreWatch {
  /** True once signals are flowing: a token queued from now on cannot miss its grant signal. */
  readonly active: boolean;
  /** Resolves when `active` turns true (or never, if the store cannot deliver signals). */
  readonly ready: Promise<void>;
  /** Stops the listener. */
  stop(): void;
}

/**
 * Fences of one key are issued this far apart, so that a holder can hand the key to up to
 * `FENCE_STRIDE − 1` local successors, each with a higher fence, before the next grant.
 */
export const FENCE_STRIDE = 1024;

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
