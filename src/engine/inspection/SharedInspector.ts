/**
 * Questions about a shared lock (a semaphore's permits, a read-write lock) that take nothing: who
 * holds it and how many wait (`locker.inspectPermits`), is it read- or write-locked
 * (`locker.isReadLocked`, `locker.isWriteLocked`), and waiting until it is free
 * (`locker.waitUntilPermitsFree`). The shared-lock twin of ./KeyInspector.ts, on the store's
 * `inspectShared` (InspectableSharedStore: the in-memory and Redis stores), every call bounded by
 * `commandTimeout`. A store without it answers `LockCapabilityError`: the shared-lock contract has
 * no operation that could probe a key without joining its line.
 *
 * Waiting polls (./pollUntilFree.ts), never stands in the store's line: a place there would be
 * granted permits.
 */
import { Observable } from 'rxjs';
import { LockCapabilityError } from '../../errors/errors.js';
import type { RetryDelay, RetryOptions } from '../../options/LockerOptions.js';
import type { AcquireSettings } from '../../options/validate.js';
import type { InspectableSharedStore, SharedHolderInfo, SharedLockInfo } from '../../store/SharedLockStore.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { StoreCall } from '../calls/storeCall.js';
import { WRITE_PERMITS } from '../shared/readWrite.js';
import type { Clock } from '../timing/Clock.js';
import { pollUntilFree } from './pollUntilFree.js';

/**
 * A holder in `locker.inspectPermits()`'s answer: the store's {@link SharedHolderInfo}, and what it is.
 *
 * @example
 * ```ts
 * const info = await lastValueFrom(locker.inspectPermits('config'));
 * const writer = info?.holders.find((h) => h.writer);
 * if (writer) console.log(`written by ${writer.token} (fence ${writer.fence}) for ${writer.ttl} ms more`);
 * ```
 */
export interface LockerSharedHolderInfo extends SharedHolderInfo {
  /** A write lock's holder (it holds all of a read-write lock's permits). */
  readonly writer: boolean;
  /** One of this locker's own acquisitions (its lease's `token` is this `token`). */
  readonly heldHere: boolean;
}

/**
 * What `locker.inspectPermits()` answers for a semaphore or read-write lock that has holders or
 * waiters: the permits used, each live holder (first to expire first), the waiters in the store's
 * line, and this locker's own waits.
 *
 * @example
 * ```ts
 * locker.inspectPermits('renderer').subscribe((info) =>
 *   console.log(info === null ? 'idle' : `${info.used} permits in use by ${info.holders.length}, ${info.waiting} waiting`),
 * );
 * ```
 */
export interface LockerPermitsInfo extends SharedLockInfo {
  readonly holders: ReadonlyArray<LockerSharedHolderInfo>;
  /** This locker's acquisitions waiting for the key (each also counted in `waiting` once in line). */
  readonly waitingHere: number;
}

/**
 * Options of `locker.waitUntilPermitsFree()`.
 *
 * @example
 * ```ts
 * const options: WaitUntilPermitsFreeOptions = { until: 'no-writer', waitTimeout: 30_000 };
 * await lastValueFrom(locker.waitUntilPermitsFree('config', options));
 * ```
 */
export interface WaitUntilPermitsFreeOptions {
  /**
   * What "free" means: `'no-holder'`, nobody holds any permit of the key (no semaphore holder, no
   * reader, no writer); `'no-writer'`, no write lock holds it (readers may).
   * @default 'no-holder'
   */
  until?: 'no-holder' | 'no-writer';
  /**
   * How long to wait before failing with `LockTimeoutError`, in ms (an integer from 0 to
   * 2147483647, or `Infinity`). `0` looks once.
   * @default the locker's `waitTimeout`
   */
  waitTimeout?: number;
  /**
   * The sleep between two looks, as for an acquisition; each is also capped by the time until the
   * first holder's lease ends.
   * @default the locker's `retry`
   */
  retry?: RetryOptions | RetryDelay;
}

/** This locker's own side of a shared lock. */
export interface SharedLocalSide {
  /** Tokens of this locker's holders of the key. */
  readonly tokens: ReadonlySet<string>;
  /** This locker's acquisitions waiting for it. */
  readonly waiting: number;
}

/** What the inspector needs of its locker. */
export interface SharedInspectorContext {
  /** Store calls within `commandTimeout` (the shared locks' own). */
  readonly access: StoreAccess;
  /** The store's `inspectShared`, if it has one. */
  readonly store: InspectableSharedStore | undefined;
  readonly clock: Clock;
  localSide(storeKey: string): SharedLocalSide;
}

/** Which holders a question counts. */
export type HolderKind = 'any' | 'reader' | 'writer';

export class SharedInspector {
  constructor(private readonly ctx: SharedInspectorContext) {}

  inspect(key: string, storeKey: string): Observable<LockerPermitsInfo | null> {
    return new Observable<LockerPermitsInfo | null>((subscriber) => {
      const call = this.look(
        key,
        storeKey,
        (info) => {
          subscriber.next(info === null ? null : this.withLocalSide(info, storeKey));
          subscriber.complete();
        },
        (error) => subscriber.error(error),
      );
      return () => call?.abandon();
    });
  }

  /** Does a holder of `kind` hold the key now? */
  isHeld(key: string, storeKey: string, kind: HolderKind): Observable<boolean> {
    return new Observable<boolean>((subscriber) => {
      const call = this.look(
        key,
        storeKey,
        (info) => {
          subscriber.next(holdersOf(info, kind).length > 0);
          subscriber.complete();
        },
        (error) => subscriber.error(error),
      );
      return () => call?.abandon();
    });
  }

  /** Emits once no holder of `kind` holds the key. */
  waitUntilFree(key: string, storeKey: string, settings: AcquireSettings, kind: HolderKind): Observable<void> {
    return pollUntilFree(key, settings, this.ctx.clock, (answer, fail) =>
      this.look(
        key,
        storeKey,
        (info) => {
          const holding = holdersOf(info, kind);
          // (holders come first to expire first: the first one's TTL is when the next look may differ)
          answer(holding.length === 0 ? { free: true } : { free: false, holderTtl: holding[0]!.ttl });
        },
        fail,
      ),
    );
  }

  /** One `inspectShared`; `undefined` (and the error told) when the store has none. */
  private look(key: string, storeKey: string, answer: (info: SharedLockInfo | null) => void, fail: (error: unknown) => void): StoreCall | undefined {
    const store = this.ctx.store;
    if (store === undefined) {
      fail(new LockCapabilityError(key, 'inspect'));
      return undefined;
    }
    return this.ctx.access.call('inspect', key, () => store.inspectShared(storeKey), { value: answer, error: fail });
  }

  private withLocalSide(info: SharedLockInfo, storeKey: string): LockerPermitsInfo {
    const local = this.ctx.localSide(storeKey);
    return {
      used: info.used,
      waiting: info.waiting,
      holders: info.holders.map((h) => ({ ...h, writer: isWriter(h), heldHere: local.tokens.has(h.token) })),
      waitingHere: local.waiting,
    };
  }
}

function isWriter(holder: SharedHolderInfo): boolean {
  return holder.weight >= WRITE_PERMITS;
}

function holdersOf(info: SharedLockInfo | null, kind: HolderKind): readonly SharedHolderInfo[] {
  if (info === null) return [];
  return kind === 'any' ? info.holders : info.holders.filter((h) => isWriter(h) === (kind === 'writer'));
}
