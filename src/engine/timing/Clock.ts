/**
 * The time and randomness of one locker, as its parts see them. Waits and back-off run on the
 * scheduler (a virtual one in tests); leases always run on the monotonic clock
 * (`performance.now()`), because their deadlines protect against a real server's real expiry.
 */
import { asyncScheduler, type SchedulerLike } from 'rxjs';

export class Clock {
  /** The scheduler of wait limits and back-off: the given one, or `asyncScheduler`. */
  readonly timers: SchedulerLike;
  /** The wait clock: the given scheduler's `now()`, or `performance.now()`. */
  readonly now: () => number;

  constructor(
    /** The injected scheduler, if any (virtual time in tests). */
    readonly scheduler: SchedulerLike | undefined,
    /** Random numbers in [0, 1) for back-off jitter. */
    readonly random: () => number,
  ) {
    this.timers = scheduler ?? asyncScheduler;
    this.now = scheduler ? () => scheduler.now() : () => performance.now();
  }
}
