/**
 * What a {@link StoreSession} sees of the part that runs it (its key's gate) and of its locker:
 * narrow interfaces, so the session depends on nothing above it.
 */
import type { RetryPolicy } from '../../options/validate.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { Clock } from '../timing/Clock.js';
import type { ContentionMemory } from './ContentionMemory.js';

/** The acquisition a session attempts for now: the first in its key's local line. */
export interface SessionRequest {
  readonly settings: { readonly ttl: number; readonly retry: RetryPolicy };
  /** Times it found the lock held; the session counts its store attempts here. */
  attempts: number;
  /** What is left of its wait at `now` (may be ≤ 0, or Infinity). */
  remaining(now: number): number;
}

/** The store lock a session won, and what the lease needs to know of it. */
export interface Grant {
  /** The first fence of the block the grant reserved. */
  readonly fence: number;
  /** How many fences the grant reserved. */
  readonly fences: number;
  /** `performance.now()` of a moment known to precede the grant: validity counts from there. */
  readonly sentAt: number;
  /** The TTL the key had at least, counted from `sentAt`. */
  readonly ttl: number;
  /** How many other processes were in the store's line at the grant, when the store says. */
  readonly waiting: number | undefined;
  /** The validity the store measured (`Acquired.validity`), counted from `sentAt`, when it says. */
  readonly validity?: number | undefined;
}

/** The gate a session works for. */
export interface SessionOwner {
  readonly key: string;
  readonly storeKey: string;
  /** The acquisition to attempt for now, or `undefined` when nobody waits any more. */
  head(): SessionRequest | undefined;
  /** How many local waiters wait behind the head. */
  readonly behind: number;
  /** How many fences a grant should reserve now. */
  fencesWanted(): number;
  /** Fails every first waiter whose wait is over at `now` (on the wait clock). */
  expireHeads(now: number): void;
  /** The first waiter's retry policy stopped: it stops waiting (a time-out). */
  headGivesUp(): void;
  /** The store granted the lock to the session. */
  won(session: object, grant: Grant): void;
  /** The session failed (store error, retry policy error): the first waiter gets `error`. */
  failed(session: object, error: unknown): void;
  /** Nobody waits any more: the session has stopped. */
  emptied(session: object): void;
}

/** What a session needs of its locker. */
export interface SessionContext {
  readonly access: StoreAccess;
  readonly clock: Clock;
  readonly contention: ContentionMemory;
  /**
   * Gives back a lock the store granted to this session after nobody wanted it. `unsure`: the
   * grant is not known, only possible (a call whose outcome is unknown); it is reported only if
   * the store did hold the key for the token.
   */
  giveBack(key: string, storeKey: string, token: string, unsure?: boolean): void;
}
