/**
 * Questions about a key that take nothing: is it locked, who holds it, and waiting until it is
 * free (`locker.isLocked`, `locker.inspect`, `locker.waitUntilFree`). Every store call is bounded by
 * `commandTimeout` like the engine's others.
 *
 * What is asked of the store:
 * - with the `inspect` capability (InspectableStore: the in-memory and Redis stores), `inspect`;
 * - without it, `isLocked` and `waitUntilFree` probe with the core contract's `extend` under a
 *   token no acquisition ever had: it is owner-checked, so it changes nothing and answers `'taken'`
 *   (held) or `'gone'` (free). Never `tryAcquire`, which would take a free key. `inspect` has no
 *   such fallback (the core contract cannot name a holder) and errors with `LockCapabilityError`.
 *
 * Waiting polls, with the acquisition's back-off (`retry`), each sleep capped by the holder's
 * remaining TTL (when known) and by what is left of `waitTimeout`. The store's wake-up signals are
 * not used: they announce a hand-off to a waiter in the store's line, and standing in that line
 * would be handed the lock.
 */
import { Observable } from 'rxjs';
import { LockCapabilityError } from '../../errors/errors.js';
import type { RetryDelay, RetryOptions } from '../../options/LockerOptions.js';
import type { AcquireSettings } from '../../options/validate.js';
import { inspectorOf, type InspectableStore, type LockInfo } from '../../store/capabilities.js';
import type { LockStore } from '../../store/LockStore.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { StoreCall } from '../calls/storeCall.js';
import { newToken } from '../session/tokens.js';
import type { Clock } from '../timing/Clock.js';
import { pollUntilFree } from './pollUntilFree.js';

/**
 * What `locker.inspect()` answers for a held key: the store's {@link LockInfo}, and this locker's side.
 *
 * @example
 * ```ts
 * const info = await lastValueFrom(locker.inspect('invoice:42'));
 * if (info?.heldHere) console.log('this process holds it, fence', info.fence ?? 'unknown');
 * ```
 */
export interface LockerLockInfo extends LockInfo {
  /** True when one of this locker's own acquisitions holds the key (or is passing it to the next). */
  readonly heldHere: boolean;
  /** This locker's acquisitions waiting for the key in its local line (not in the store's). */
  readonly waitingHere: number;
}

/**
 * Options of `locker.waitUntilFree()`.
 *
 * @example
 * ```ts
 * const options: WaitUntilFreeOptions = { waitTimeout: 60_000, retry: { minDelay: 200, jitter: 100 } };
 * await lastValueFrom(locker.waitUntilFree('job:import', options));
 * ```
 */
export interface WaitUntilFreeOptions {
  /**
   * How long to wait for the key to be free before failing with `LockTimeoutError`, in ms (an
   * integer from 0 to 2147483647, or `Infinity`). `0` looks once.
   * @default the locker's `waitTimeout`
   */
  waitTimeout?: number;
  /**
   * The sleep between two looks, as for an acquisition (`{ minDelay, jitter }` or a function);
   * each sleep is also capped by the holder's remaining TTL when the store says it.
   * @default the locker's `retry`
   */
  retry?: RetryOptions | RetryDelay;
}

/** This locker's own side of a key (its gate). */
export interface LocalSide {
  /** Held by one of this locker's acquisitions (or passing between two of them). */
  held: boolean;
  /** This locker's acquisitions waiting for it. */
  waiting: number;
}

/** What the inspector needs of its locker. */
export interface InspectorContext {
  readonly access: StoreAccess;
  readonly clock: Clock;
  localSide(storeKey: string): LocalSide;
}

/** A store's view of a key: held (with what it knows of the holder) or free. */
type Look = { readonly held: true; readonly info?: LockInfo } | { readonly held: false };

export class KeyInspector {
  private readonly inspector: (LockStore & InspectableStore) | undefined;

  constructor(private readonly ctx: InspectorContext) {
    this.inspector = inspectorOf(ctx.access.store);
  }

  isLocked(key: string, storeKey: string): Observable<boolean> {
    return new Observable<boolean>((subscriber) => {
      if (this.ctx.localSide(storeKey).held) {
        subscriber.next(true);
        subscriber.complete();
        return;
      }
      const call = this.look(
        key,
        storeKey,
        (look) => {
          subscriber.next(look.held);
          subscriber.complete();
        },
        (error) => subscriber.error(error),
      );
      return () => call.abandon();
    });
  }

  inspect(key: string, storeKey: string): Observable<LockerLockInfo | null> {
    return new Observable<LockerLockInfo | null>((subscriber) => {
      const inspector = this.inspector;
      if (inspector === undefined) {
        subscriber.error(new LockCapabilityError(key, 'inspect'));
        return;
      }
      const call = this.ctx.access.call('inspect', key, () => inspector.inspect(storeKey), {
        value: (info) => {
          const local = this.ctx.localSide(storeKey);
          subscriber.next(info === null ? null : { ...info, heldHere: local.held, waitingHere: local.waiting });
          subscriber.complete();
        },
        error: (error) => subscriber.error(error),
      });
      return () => call.abandon();
    });
  }

  waitUntilFree(key: string, storeKey: string, settings: AcquireSettings): Observable<void> {
    return pollUntilFree(key, settings, this.ctx.clock, (answer, fail) => {
      // held here: no store call (the holder's TTL is renewed, so no cap by it either)
      if (this.ctx.localSide(storeKey).held) {
        answer({ free: false });
        return undefined;
      }
      return this.look(key, storeKey, (look) => answer(look.held ? { free: false, holderTtl: look.info?.ttl } : { free: true }), fail);
    });
  }

  /** One look at the store: `inspect` when it has it, else the owner-checked `extend` probe. */
  private look(key: string, storeKey: string, answer: (look: Look) => void, fail: (error: unknown) => void): StoreCall {
    const inspector = this.inspector;
    if (inspector !== undefined) {
      return this.ctx.access.call('inspect', key, () => inspector.inspect(storeKey), {
        value: (info) => answer(info === null ? { held: false } : { held: true, info }),
        error: fail,
      });
    }
    const store = this.ctx.access.store;
    // A token no acquisition ever had: the owner check can only answer 'gone' or 'taken'.
    const probe = `probe:${newToken()}`;
    return this.ctx.access.call('inspect', key, () => store.extend(storeKey, probe, 1), {
      value: (outcome) => answer(outcome === 'gone' ? { held: false } : { held: true }),
      error: fail,
    });
  }
}
