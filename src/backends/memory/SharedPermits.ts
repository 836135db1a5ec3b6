/**
 * The in-memory store's shared locks (the `SharedLockStore` capability, see
 * ../../store/SharedLockStore.ts): per key, the holders with their weights, fences and expiries, and
 * a FIFO line of waiters with their places. Expired holders and lapsed places are swept on every
 * call that touches the key, and a key with neither holders nor live places is forgotten, so memory
 * stays bounded by the keys in use.
 */
import type { SharedLockInfo } from '../../store/SharedLockStore.js';
import type { AcquireResult, ExtendOutcome } from '../../store/LockStore.js';

interface Holder {
  readonly weight: number;
  readonly fence: number;
  /** Fences its grant reserved, from `fence` on (its own and its local successors'). */
  readonly fences: number;
  expiresAt: number;
}

interface Place {
  lapseAt: number;
  ttl: number;
  weight: number;
  capacity: number;
  /** Fences a grant to it reserves. */
  fences: number;
}

class SharedKey {
  readonly holders = new Map<string, Holder>();
  /** Waiters in arrival order (a Map keeps insertion order; a refresh keeps the entry in place). */
  readonly line = new Map<string, Place>();
  used = 0;
}

export class SharedPermits {
  private readonly keys = new Map<string, SharedKey>();

  constructor(
    private readonly clock: () => number,
    /** Reserves `fences` consecutive fences; returns the first. */
    private readonly reserveFences: (fences: number) => number,
    /** How long a place lasts without a refresh, in ms. */
    readonly placeTtl: number,
  ) {}

  tryAcquire(key: string, token: string, ttlMs: number, weight: number, capacity: number, place: 'keep' | 'leave', fences = 1): AcquireResult {
    const now = this.clock();
    const state = this.settled(key, now);
    const mine = state.holders.get(token);
    if (mine !== undefined)
      return { acquired: true, fence: mine.fence, fences: mine.fences, ttl: Math.max(0, Math.ceil(mine.expiresAt - now)), waiting: state.line.size };
    const first = state.line.keys().next();
    if ((first.done === true || first.value === token) && state.used + weight <= capacity) {
      state.line.delete(token);
      const fence = this.grant(state, token, weight, now + ttlMs, fences);
      return { acquired: true, fence, fences, waiting: state.line.size };
    }
    if (place === 'leave') {
      state.line.delete(token);
      // (the waiters behind it may fit now)
      this.promote(state, now);
      this.forgetIfEmpty(key, state);
      return { acquired: false, holderTtl: this.firstExpiry(state, now) };
    }
    const existing = state.line.get(token);
    const lapseAt = now + this.placeTtl;
    if (existing !== undefined) Object.assign(existing, { lapseAt, ttl: ttlMs, weight, capacity, fences });
    else state.line.set(token, { lapseAt, ttl: ttlMs, weight, capacity, fences });
    return { acquired: false, queued: true, placeTtl: this.placeTtl, holderTtl: this.firstExpiry(state, now) };
  }

  extend(key: string, token: string, ttlMs: number): ExtendOutcome {
    const now = this.clock();
    const holder = this.keys.get(key)?.holders.get(token);
    if (holder === undefined || holder.expiresAt < now) return 'gone';
    holder.expiresAt = now + ttlMs;
    return 'extended';
  }

  release(key: string, token: string): boolean {
    return this.giveBack(key, token, false);
  }

  leave(key: string, token: string): boolean {
    return this.giveBack(key, token, true);
  }

  /**
   * Gives `token`'s permits back (and, `leaving`, its place in line), then grants the waiters at
   * the head of the line that fit now; says whether it held live permits.
   */
  private giveBack(key: string, token: string, leaving: boolean): boolean {
    const now = this.clock();
    const state = this.keys.get(key);
    if (state === undefined) return false;
    if (leaving) state.line.delete(token);
    const holder = state.holders.get(token);
    const held = holder !== undefined && holder.expiresAt >= now;
    if (holder !== undefined) this.drop(state, token, holder);
    this.dropExpired(state, now);
    this.promote(state, now);
    this.forgetIfEmpty(key, state);
    return held;
  }

  /** The live holders and places of `key`, read without sweeping or granting anything. */
  inspect(key: string): SharedLockInfo | null {
    const now = this.clock();
    const state = this.keys.get(key);
    if (state === undefined) return null;
    const holders = [...state.holders]
      .filter(([, h]) => h.expiresAt >= now)
      .sort(([, a], [, b]) => a.expiresAt - b.expiresAt)
      .map(([token, h]) => ({ token, weight: h.weight, fence: h.fence, ttl: Math.max(0, Math.ceil(h.expiresAt - now)) }));
    let waiting = 0;
    for (const place of state.line.values()) if (place.lapseAt > now) waiting++;
    if (holders.length === 0 && waiting === 0) return null;
    return { used: holders.reduce((sum, h) => sum + h.weight, 0), holders, waiting };
  }

  /** Drops every key with nothing live left (the store's periodic sweep). */
  sweep(): void {
    const now = this.clock();
    for (const key of [...this.keys.keys()]) this.forgetIfEmpty(key, this.settled(key, now));
  }

  get size(): number {
    return this.keys.size;
  }

  clear(): void {
    this.keys.clear();
  }

  /** The key's state with expired holders and lapsed places swept and the heads that fit granted. */
  private settled(key: string, now: number): SharedKey {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = new SharedKey();
      this.keys.set(key, state);
      return state;
    }
    this.dropExpired(state, now);
    this.promote(state, now);
    return state;
  }

  /** Drops the holders whose lease ended: their permits are free. */
  private dropExpired(state: SharedKey, now: number): void {
    for (const [token, holder] of state.holders) if (holder.expiresAt < now) this.drop(state, token, holder);
  }

  /** Grants the live waiters at the head of the line, in order, while their weights fit. */
  private promote(state: SharedKey, now: number): void {
    for (const [token, place] of state.line) {
      if (place.lapseAt <= now) {
        state.line.delete(token);
        continue;
      }
      if (state.used + place.weight > place.capacity) return;
      state.line.delete(token);
      this.grant(state, token, place.weight, now + Math.min(place.lapseAt - now, place.ttl), place.fences);
    }
  }

  private grant(state: SharedKey, token: string, weight: number, expiresAt: number, fences: number): number {
    const fence = this.reserveFences(fences);
    state.holders.set(token, { weight, fence, fences, expiresAt });
    state.used += weight;
    return fence;
  }

  private drop(state: SharedKey, token: string, holder: Holder): void {
    state.holders.delete(token);
    state.used -= holder.weight;
  }

  private firstExpiry(state: SharedKey, now: number): number | undefined {
    let first = Infinity;
    for (const holder of state.holders.values()) first = Math.min(first, holder.expiresAt);
    return first === Infinity ? undefined : Math.max(0, Math.ceil(first - now));
  }

  private forgetIfEmpty(key: string, state: SharedKey): void {
    if (state.holders.size > 0) return;
    const now = this.clock();
    for (const place of state.line.values()) if (place.lapseAt > now) return;
    this.keys.delete(key);
  }
}
