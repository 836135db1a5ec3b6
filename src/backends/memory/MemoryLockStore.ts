/**
 * The embedded, in-process store: the default when no store is given. It keeps Redis's
 * semantics (set-if-absent with a TTL, owner-checked delete and extend, expired keys behave as
 * absent) so code moves to Redis unchanged, but it only excludes within one process.
 */
import { RecentRefusals } from './RecentRefusals.js';
import { LockOptionsError } from '../../errors/errors.js';
import { MAX_MS } from '../../options/limits.js';
import { fenceCountError, isFenceCount, isStoreTtl, sharedAcquireError, storeTtlError } from '../../options/storeArguments.js';
import type { ClosableStore, ExtendRequest, InspectableStore, LockInfo } from '../../store/capabilities.js';
import type { Acquired, AcquireResult, ExtendOutcome, LockStore } from '../../store/LockStore.js';
import type { BatchExtendSharedStore, InspectableSharedStore, SharedLockInfo, SharedLockStore, SharedPlace } from '../../store/SharedLockStore.js';
import { SharedPermits } from './SharedPermits.js';

/**
 * Options of {@link MemoryLockStore}.
 *
 * @example
 * ```ts
 * // a test on a virtual clock: expiry follows `now`, not the wall clock
 * let now = 0;
 * const options: MemoryLockStoreOptions = { clock: () => now, sweepInterval: 60_000 };
 * const store = new MemoryLockStore(options);
 * await store.tryAcquire('lock:a', 'token-1', 1_000);
 * now += 1_001; // lock:a has expired
 * ```
 */
export interface MemoryLockStoreOptions {
  /**
   * Monotonic clock in milliseconds used for expiry. Inject one to control time in tests.
   * @default performance.now
   */
  clock?: () => number;
  /**
   * How often expired entries are swept out of memory, in milliseconds. Expiry itself is exact
   * (checked on every access); the sweep bounds memory, and grants the waiters of a semaphore or
   * read-write lock that an expired holder made room for (as the next call touching the lock
   * would). The sweep timer is unref'd and stops while the store is empty.
   * @default 1000
   */
  sweepInterval?: number;
  /**
   * How long a waiter's place in the line of a semaphore or read-write lock lasts without being
   * renewed, in ms (an integer from 100 to 2147483647); a waiter renews it with every attempt. As
   * `RedisLockStore`'s option of the same name.
   * @default 3000
   */
  placeTtl?: number;
}

// A held key and a grant's answer are made once per acquisition: classes, not object literals
// (one shape, and an allocation site V8 keeps in the young generation; a literal's site can be
// pretenured into old space once a burst of them survives a collection).

class Entry {
  constructor(
    readonly token: string,
    public expiresAt: number,
    /** The first fence of the holder's grant (for inspect). */
    readonly fence: number,
  ) {}
}

class Granted implements Acquired {
  readonly acquired = true;
  readonly fence: number;
  constructor(fence: number) {
    this.fence = fence;
  }
}

/**
 * In-memory {@link LockStore}: exclusion within one process, with TTLs.
 *
 * Fencing tokens come from one counter for the whole store, so they increase per key as the
 * contract asks while memory stays bounded by the keys currently held (the process's memory is
 * never lost while it holds locks).
 *
 * @example
 * ```ts
 * import { createLocker, MemoryLockStore } from 'rxjs-lock';
 * const locker = createLocker({ store: new MemoryLockStore() });
 * ```
 */
export class MemoryLockStore implements LockStore, InspectableStore, ClosableStore, SharedLockStore, InspectableSharedStore, BatchExtendSharedStore {
  private readonly entries = new Map<string, Entry>();
  /** Semaphores and read-write locks (see ./SharedPermits.ts). */
  private readonly shared: SharedPermits;
  private readonly clock: () => number;
  private readonly sweepInterval: number;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private lastFence = 0;
  /** Who was refused which key lately (see ./RecentRefusals.ts). */
  private readonly refusals = new RecentRefusals();

  constructor(options: MemoryLockStoreOptions = {}) {
    if (typeof options !== 'object' || options === null || Array.isArray(options))
      throw new LockOptionsError('options', 'an object of MemoryLockStore options', options);
    const { clock = () => performance.now(), sweepInterval = 1000, placeTtl = 3000, ...unknown } = options;
    const extra = Object.keys(unknown)[0];
    if (extra !== undefined)
      throw new LockOptionsError(
        `options.${extra}`,
        'one of the known MemoryLockStore options: clock, sweepInterval, placeTtl',
        (unknown as Record<string, unknown>)[extra],
      );
    if (!Number.isInteger(placeTtl) || placeTtl < 100 || placeTtl > MAX_MS)
      throw new LockOptionsError('placeTtl', `an integer from 100 to ${MAX_MS} (ms)`, placeTtl);
    if (typeof clock !== 'function') throw new LockOptionsError('clock', 'a function returning milliseconds', clock);
    if (!Number.isInteger(sweepInterval) || sweepInterval < 1 || sweepInterval > MAX_MS) {
      throw new LockOptionsError('sweepInterval', `an integer from 1 to ${MAX_MS} (ms)`, sweepInterval);
    }
    this.clock = clock;
    this.sweepInterval = sweepInterval;
    this.shared = new SharedPermits(clock, (fences) => this.reserve(fences), placeTtl);
  }

  tryAcquire(key: string, token: string, ttlMs: number, fences = 1): Promise<AcquireResult> {
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    if (!isFenceCount(fences)) return Promise.reject(fenceCountError(fences));
    const held = this.live(key);
    if (held !== undefined) {
      const left = Math.max(0, held.expiresAt - this.clock());
      // The holder's own token asking again (a call sent twice) is told the key is its.
      if (held.token === token) return Promise.resolve({ acquired: true, fence: this.reserve(fences), ttl: left });
      this.refusals.note(key, token, this.clock());
      return Promise.resolve({ acquired: false, holderTtl: left });
    }
    const fence = this.reserve(fences);
    const now = this.clock();
    this.entries.set(key, new Entry(token, now + ttlMs, fence));
    this.startSweeper();
    // No line here: a grant says when others were refused the key lately (Acquired.waiting).
    if (this.refusals.othersRefused(key, token, now)) return Promise.resolve({ acquired: true, fence, waiting: 1 });
    return Promise.resolve(new Granted(fence));
  }

  /** Reserves `fences` fences (a count the caller checked: see isFenceCount); returns the first. */
  private reserve(fences: number): number {
    const first = this.lastFence + 1;
    this.lastFence += fences;
    return first;
  }

  release(key: string, token: string): Promise<boolean> {
    const entry = this.live(key);
    if (entry === undefined || entry.token !== token) return Promise.resolve(false);
    this.entries.delete(key);
    return Promise.resolve(true);
  }

  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    const entry = this.live(key);
    if (entry === undefined) return Promise.resolve('gone');
    if (entry.token !== token) return Promise.resolve('taken');
    entry.expiresAt = this.clock() + ttlMs;
    return Promise.resolve('extended');
  }

  // ─── shared locks (semaphores, read-write locks) ─────────────────────────────────────────────

  tryAcquireShared(key: string, token: string, ttlMs: number, weight: number, capacity: number, place: SharedPlace, fences = 1): Promise<AcquireResult> {
    const bad = sharedAcquireError(ttlMs, weight, capacity, fences);
    if (bad !== undefined) return Promise.reject(bad);
    const result = this.shared.tryAcquire(key, token, ttlMs, weight, capacity, place, fences);
    this.startSweeper();
    return Promise.resolve(result);
  }

  extendShared(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    if (!isStoreTtl(ttlMs)) return Promise.reject(storeTtlError(ttlMs));
    return Promise.resolve(this.shared.extend(key, token, ttlMs));
  }

  /** {@link BatchExtendSharedStore.extendSharedMany}: each request's `extendShared`, in order. */
  extendSharedMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    for (const r of requests) if (!isStoreTtl(r.ttlMs)) return Promise.reject(storeTtlError(r.ttlMs));
    return Promise.resolve(requests.map((r) => this.shared.extend(r.key, r.token, r.ttlMs)));
  }

  releaseShared(key: string, token: string): Promise<boolean> {
    return Promise.resolve(this.shared.release(key, token));
  }

  leaveShared(key: string, token: string): Promise<boolean> {
    return Promise.resolve(this.shared.leave(key, token));
  }

  /** The holders and waiters of the shared lock `key`, or `null` when it has none. */
  inspectShared(key: string): Promise<SharedLockInfo | null> {
    return Promise.resolve(this.shared.inspect(key));
  }

  /**
   * The holder of `key` (token, remaining TTL, the first fence of its grant), or `null` when it is
   * free. This store has no line: `waiting` is always 0 (a locker's own waiters are its business).
   */
  inspect(key: string): Promise<LockInfo | null> {
    const entry = this.live(key);
    if (entry === undefined) return Promise.resolve(null);
    return Promise.resolve({ token: entry.token, ttl: this.pttl(key), fence: entry.fence, waiting: 0 });
  }

  /** The token holding `key`, or `undefined` when it is free. For inspection and tests. */
  holder(key: string): string | undefined {
    return this.live(key)?.token;
  }

  /** Remaining time-to-live of `key` in ms, or -2 when it is free (as Redis `PTTL`). */
  pttl(key: string): number {
    const entry = this.live(key);
    return entry === undefined ? -2 : Math.max(0, Math.ceil(entry.expiresAt - this.clock()));
  }

  /** Stops the sweep timer and forgets every key. */
  close(): void {
    this.entries.clear();
    this.shared.clear();
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Number of keys currently held (expired ones excluded). */
  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    // Redis expires a key once now > expiry; at the exact instant it is still held.
    if (entry !== undefined && entry.expiresAt < this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.clock();
    for (const [key, entry] of this.entries) if (entry.expiresAt < now) this.entries.delete(key);
    this.shared.sweep();
    if (this.entries.size === 0 && this.shared.size === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => this.sweep(), this.sweepInterval);
    this.sweeper.unref?.();
  }
}
