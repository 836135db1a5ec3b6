/**
 * The metrics of {@link instrumentLocker}: what a locker's events say, as OpenTelemetry
 * instruments. Names follow the OpenTelemetry conventions (dot-separated, unit in `unit`).
 */
import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { LockEvent } from '../../engine/events/events.js';

/**
 * How an acquisition ended, as the `rxjs_lock.outcome` attribute of `rxjs_lock.acquisitions`.
 *
 * @example
 * ```ts
 * // a View or query on `rxjs_lock.acquisitions`, by outcome
 * const failures: AcquisitionOutcome[] = ['timed_out', 'failed'];
 * const query = `sum(rate(rxjs_lock_acquisitions_total{rxjs_lock_outcome=~"${failures.join('|')}"}[5m]))`;
 * ```
 */
export type AcquisitionOutcome = 'acquired' | 'timed_out' | 'skipped' | 'failed' | 'closed';
/**
 * How a hold ended, as the `rxjs_lock.outcome` attribute of `rxjs_lock.releases`.
 *
 * @example
 * ```ts
 * // releases whose hold was not protected until its end, or not confirmed
 * const unsafe: ReleaseOutcome[] = ['gone', 'failed'];
 * const query = `sum(rate(rxjs_lock_releases_total{rxjs_lock_outcome=~"${unsafe.join('|')}"}[5m]))`;
 * ```
 */
export type ReleaseOutcome = 'released' | 'passed' | 'gone' | 'failed' | 'abandoned';
/**
 * What a long wait was behind, as the `rxjs_lock.cause` attribute of `rxjs_lock.long_waits`: a
 * holder of this process (`held_here`) or of another (`held`; for a semaphore or read-write lock,
 * holders of its permits), a key found free (the grant on its way), a failed store read
 * (`store_failed`), or a store that cannot be read (`unknown`).
 */
export type LongWaitCause = 'held_here' | 'held' | 'free' | 'store_failed' | 'unknown';

/** The instruments, made once per instrumented locker. */
export class LockMetrics {
  private readonly acquisitions: Counter;
  private readonly waitTime: Histogram;
  private readonly holdTime: Histogram;
  private readonly renewals: Counter;
  private readonly losses: Counter;
  private readonly releases: Counter;
  private readonly longWaits: Counter;
  private readonly longWaitReadTime: Histogram;

  constructor(
    meter: Meter,
    /** Attributes of one key (see InstrumentLockerOptions.keyGroup), merged into every data point about it. */
    private readonly keyAttributes: (key: string) => Attributes,
  ) {
    this.acquisitions = meter.createCounter('rxjs_lock.acquisitions', {
      description:
        'Acquisitions that ended, by outcome (acquired, timed_out, skipped, failed, closed) and, when acquired, whether the lock came from a local holder (handoff)',
    });
    this.waitTime = meter.createHistogram('rxjs_lock.acquire.wait_time', {
      description: 'Time from subscribing to the end of the wait (the lock held, or given up), by outcome',
      unit: 'ms',
    });
    this.holdTime = meter.createHistogram('rxjs_lock.hold.duration', {
      description: 'Time from the grant to the release (or the loss) of a lease, by outcome',
      unit: 'ms',
    });
    this.renewals = meter.createCounter('rxjs_lock.renewals', {
      description: 'Lease renewals, by outcome (renewed, failed: retried while the lease is valid)',
    });
    this.losses = meter.createCounter('rxjs_lock.losses', {
      description: 'Leases lost while held, by reason (expired, taken-over, store-unreachable, locker-closed, …)',
    });
    this.releases = meter.createCounter('rxjs_lock.releases', {
      description: 'Holds that ended without a loss, by outcome (released, passed, gone, failed, abandoned)',
    });
    this.longWaits = meter.createCounter('rxjs_lock.long_waits', {
      description:
        'Reports of acquisitions still waiting after longWait (one per longWait of waiting), by what the wait was behind (held_here, held, free, store_failed, unknown)',
    });
    this.longWaitReadTime = meter.createHistogram('rxjs_lock.long_wait.store_read_time', {
      description: 'How long the store read of a long-wait report took: a slow store shows here, a long holder does not',
      unit: 'ms',
    });
  }

  /** Records what `event` says; `heldMs` is the hold time of a lost lease, when its grant was seen. */
  record(event: LockEvent, heldMs?: number): void {
    const key = this.keyAttributes(event.key);
    switch (event.type) {
      case 'acquired':
        this.acquisitions.add(1, { ...key, 'rxjs_lock.outcome': 'acquired', 'rxjs_lock.handoff': event.passed });
        this.waitTime.record(event.waitedMs, { ...key, 'rxjs_lock.outcome': 'acquired' });
        return;
      case 'timed-out': {
        const outcome: AcquisitionOutcome = event.skipped ? 'skipped' : 'timed_out';
        this.acquisitions.add(1, { ...key, 'rxjs_lock.outcome': outcome });
        this.waitTime.record(event.waitedMs, { ...key, 'rxjs_lock.outcome': outcome });
        return;
      }
      case 'acquire-failed':
        this.acquisitions.add(1, { ...key, 'rxjs_lock.outcome': 'failed' });
        return;
      case 'closed':
        this.acquisitions.add(1, { ...key, 'rxjs_lock.outcome': 'closed' });
        return;
      case 'renewed':
        this.renewals.add(1, { ...key, 'rxjs_lock.outcome': 'renewed' });
        return;
      case 'renew-failed':
        this.renewals.add(1, { ...key, 'rxjs_lock.outcome': 'failed' });
        return;
      case 'lost':
        this.losses.add(1, { ...key, 'rxjs_lock.reason': event.reason });
        if (heldMs !== undefined) this.holdTime.record(heldMs, { ...key, 'rxjs_lock.outcome': 'lost' });
        return;
      case 'released':
        this.releases.add(1, { ...key, 'rxjs_lock.outcome': event.outcome });
        this.holdTime.record(event.heldMs, { ...key, 'rxjs_lock.outcome': event.outcome });
        return;
      case 'release-failed':
        this.releases.add(1, { ...key, 'rxjs_lock.outcome': 'failed' });
        return;
      case 'abandoned-released':
        this.releases.add(1, { ...key, 'rxjs_lock.outcome': 'abandoned' });
        return;
      case 'long-wait': {
        const cause: LongWaitCause =
          event.error !== undefined
            ? 'store_failed'
            : event.heldHere
              ? 'held_here'
              : event.permits !== undefined
                ? event.permits.holders === 0
                  ? 'free'
                  : 'held'
                : event.holder === null
                  ? 'free'
                  : event.holder === undefined
                    ? 'unknown'
                    : 'held';
        this.longWaits.add(1, { ...key, 'rxjs_lock.cause': cause });
        if (event.storeReadMs !== undefined) this.longWaitReadTime.record(event.storeReadMs, { ...key, 'rxjs_lock.cause': cause });
        return;
      }
    }
  }
}
