/**
 * Keeps a locker's store leases: opens them, renews them (one heap and one timer for all, renewals
 * that fall due together sent as one batch), extends them on demand, gives them back, and reports
 * what happened. Deadlines and loss live in each {@link StoreLease}; this part talks to the store
 * and to `events$` for them.
 */
import { asError, LockStoreError } from '../../errors/errors.js';
import type { ExtendOutcome, LockStore, ReleasedGrant } from '../../store/LockStore.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { StoreRequest } from '../calls/storeCall.js';
import type { EventReporter } from '../events/EventReporter.js';
import { LeaseTimers, type DueKind } from './LeaseTimers.js';
import { StoreLease, type PassedHolder, type StoreLeaseOwner } from './StoreLease.js';

/** Renewal settings of one lease. */
export type RenewSetting = false | { readonly interval: number | undefined };

export class LeaseKeeper implements StoreLeaseOwner {
  private readonly timers = new LeaseTimers((leases) => this.renew(leases as StoreLease[]));

  constructor(
    private readonly access: StoreAccess,
    private readonly events: EventReporter,
    /**
     * Lock-delay is on: a lease lost to its deadline is not given back (its key lapses by itself,
     * `lockDelay` after that deadline), see {@link LeaseKeeper.release}.
     */
    private readonly lockDelay = false,
  ) {}

  /** Entries in the renewal heap, live and stale (for tests). */
  get scheduled(): number {
    return this.timers.size;
  }

  /**
   * The store lease a session won: its validity counts from `sentAt`, with the key's `ttl`;
   * `grant` is the grant as the store answered it; `validity`, the one the store measured, if it did.
   */
  open(
    key: string,
    storeKey: string,
    token: string,
    ttl: number,
    sentAt: number,
    wantedTtl: number,
    renew: RenewSetting,
    grant?: ReleasedGrant,
    validity?: number,
  ): StoreLease {
    return new StoreLease(this, key, storeKey, token, ttl, sentAt, wantedTtl, renew, grant, validity);
  }

  /**
   * Gives the store lease back (its renewal stopped first) — unless lock-delay is on and the lease
   * lapsed (lost to its deadline): then nothing is sent and `done` hears `false`. `done` hears `true` when the store
   * still had our key, `false` when it did not, or the store's error (also reported as
   * `release-failed`, unless `quiet`: the lease was lost, and its `lost` event ended its story); it
   * is always called, once.
   */
  release(lease: StoreLease, done: (answer: boolean | LockStoreError) => void, now?: number, quiet = false): void {
    lease.end();
    if (this.lockDelay && lease.lapsed) {
      // Lock-delay: the holder was lost, not released: its key stays until it lapses, lockDelay
      // past the deadline, so whatever the holder still had in flight lands before the next one
      // starts. (A key that was gone or taken is no longer ours to give back anyway.)
      lease.released(false);
      done(false);
      return;
    }
    this.access.send('release', lease.key, new LeaseRelease(this.access.store, lease, done, quiet ? undefined : this.events), now);
  }

  /**
   * Gives back a lock the store granted to an acquisition nobody waits for any more. `unsure`: the
   * grant was only possible (a call whose outcome is unknown): reported only when the key was ours.
   */
  releaseAbandoned(key: string, storeKey: string, token: string, unsure = false): void {
    this.access.call('release', key, () => this.access.store.release(storeKey, token), {
      value: (deleted) => {
        if (deleted || !unsure) this.events.abandonedReleased(key, token, deleted);
      },
      error: (error) => {
        if (!unsure) this.events.releaseFailed(key, token, error);
      },
    });
  }

  extendLease(lease: StoreLease, ttl: number): Promise<ExtendOutcome> {
    return new Promise<ExtendOutcome>((resolve, reject) => {
      this.access.call('extend', lease.key, () => this.access.store.extend(lease.storeKey, lease.token, ttl), { value: resolve, error: reject });
    });
  }

  schedule(lease: StoreLease, kind: DueKind, dueAt: number, slack?: number): void {
    this.timers.schedule(lease, kind, dueAt, slack);
  }

  unschedule(lease: StoreLease): void {
    this.timers.cancel(lease);
  }

  renewed(lease: StoreLease): void {
    this.events.renewed(lease.key, lease.token, lease.validUntil);
  }

  renewFailed(lease: StoreLease, error: LockStoreError): void {
    this.events.renewFailed(lease.key, lease.token, error, lease.validUntil);
  }

  passesSettled(passes: readonly PassedHolder[], outcome: 'passed' | 'gone' | LockStoreError): void {
    for (const { holder, passedAt } of passes) {
      if (outcome instanceof LockStoreError) this.events.releaseFailed(holder.key, holder.token, outcome);
      else this.events.released(holder, passedAt, outcome);
    }
  }

  /** Stops the renewal timer for good (the locker was closed and its leases given back). */
  stop(): void {
    this.timers.stop();
  }

  /**
   * Renews leases whose renewal came due together, in one store call when the store can batch.
   * Each lease watches only its deadline until the answer comes.
   */
  private renew(due: StoreLease[]): void {
    // A lease collected with the batch may have been given back since (a loss handled in the same
    // timer firing can end a sibling stream): it must not be extended, nor rescheduled.
    const leases = due.filter((lease) => lease.isHeld);
    if (leases.length === 0) return;
    const sentAt = performance.now();
    const requests = leases.map((lease) => ({ key: lease.storeKey, token: lease.token, ttlMs: lease.renewTtl }));
    // (each lease records the sending at a moment of its own, which its answer names)
    const sentAts = leases.map((lease) => lease.renewing(sentAt));
    const { store, batch } = this.access;
    // One lease whose extension fails must not fail the others: errors are per lease.
    const run =
      batch !== undefined && requests.length > 1
        ? () => batch.extendMany(requests)
        : () => Promise.all(requests.map((r) => store.extend(r.key, r.token, r.ttlMs).catch(asError)));
    const what = leases.length === 1 ? leases[0]!.key : `${leases[0]!.key} (and ${leases.length - 1} more leases)`;
    this.access.call('extend', what, run, {
      value: (outcomes) => {
        leases.forEach((lease, i) => {
          const outcome = outcomes[i];
          if (outcome === 'extended' || outcome === 'gone' || outcome === 'taken') lease.extended(outcome, sentAts[i]!, requests[i]!.ttlMs);
          else if (outcome instanceof Error) lease.renewFailed(new LockStoreError(lease.key, 'extend', outcome.message, outcome), sentAts[i]!);
          else
            lease.renewFailed(new LockStoreError(lease.key, 'extend', `the store answered ${String(outcome)}, not 'extended', 'gone' or 'taken'`), sentAts[i]!);
        });
      },
      error: (error) => {
        leases.forEach((lease, i) => lease.renewFailed(error, sentAts[i]!));
      },
    });
  }
}

/** The release of a store lease, as its store call (one object, see ../calls/storeCall.ts). */
class LeaseRelease implements StoreRequest<boolean> {
  constructor(
    private readonly store: LockStore,
    private readonly lease: StoreLease,
    private readonly done: (answer: boolean | LockStoreError) => void,
    /** Where a failure is reported (`undefined`: quietly). */
    private readonly events: EventReporter | undefined,
  ) {}

  send(): Promise<boolean> {
    const lease = this.lease;
    return this.store.release(lease.storeKey, lease.token, lease.releasedGrant);
  }

  value(deleted: boolean): void {
    this.lease.released(deleted);
    this.done(deleted);
  }

  error(error: LockStoreError): void {
    const lease = this.lease;
    this.events?.releaseFailed(lease.key, lease.token, error);
    lease.released(error);
    this.done(error);
  }
}
