/**
 * A held lock. The lease is what `locker.acquire()` emits; `withLock` releases it for you.
 * Release runs at most once, whoever calls it and however often, and never rejects.
 */

/** A held lock, as emitted by `locker.acquire()`. */
export interface Lease {
  /** The key as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** This acquisition's unique value in the store; only it can release the key. */
  readonly token: string;
  /** Lease length granted by the store, in ms. */
  readonly ttl: number;
  /** `performance.now()` when the successful acquire call was sent. */
  readonly acquiredAt: number;
  /** True once `release()` has been called. */
  readonly released: boolean;
  /**
   * Gives the lock back. Resolves `true` when our own key was deleted, `false` when it was
   * already gone (expired or taken over) or when the store could not be reached (reported on
   * `locker.events$` as `release-failed`). Never rejects; calling it again returns the first
   * call's promise.
   */
  release(): Promise<boolean>;
}

/** What a lease needs from its engine. */
export interface LeaseOwner {
  releaseLease(lease: HeldLease): Promise<boolean>;
}

export class HeldLease implements Lease {
  private releasing: Promise<boolean> | undefined;

  constructor(
    private readonly owner: LeaseOwner,
    readonly key: string,
    readonly storeKey: string,
    readonly token: string,
    readonly ttl: number,
    readonly acquiredAt: number,
  ) {}

  get released(): boolean {
    return this.releasing !== undefined;
  }

  release(): Promise<boolean> {
    return (this.releasing ??= this.owner.releaseLease(this));
  }
}
