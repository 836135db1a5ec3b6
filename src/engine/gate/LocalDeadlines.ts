/**
 * The wait limits of a gate's waiters that wait behind someone of this locker, on one timer: it is
 * armed for the earliest limit, and when it fires the gate times out whoever is due and arms it
 * again for the earliest left. A timer per waiter cost every acquisition that waited locally a
 * scheduler action and a Node timer, made and cancelled — on a hot key, each local hand-off.
 *
 * A limit later than the armed one changes nothing (waiters who asked for the same `waitTimeout`
 * join in order, so their limits come in order); a waiter that stops waiting locally leaves the
 * timer as it is — it may fire for nobody, and is then armed for the earliest limit left — unless
 * it was the last one watched: then the timer goes, so none is left behind.
 */
import type { Subscription } from 'rxjs';
import type { Clock } from '../timing/Clock.js';

export class LocalDeadlines {
  private timer: Subscription | undefined;
  /** When the timer fires, on the wait clock (Infinity: not armed). */
  private armedAt = Infinity;
  /** Limits watched: waiters that wait locally with a finite limit. At 0 the timer goes. */
  private watched = 0;

  constructor(
    private readonly clock: Clock,
    /** The timer fired at `now` (wait clock): time out who is due, then `arm` for the earliest limit left. */
    private readonly due: (now: number) => void,
  ) {}

  /** A waiter's limit at `at` (wait clock), until {@link forget}: the timer fires by then. */
  watch(at: number): void {
    this.watched++;
    this.arm(at);
  }

  /** A waiter whose limit was watched no longer waits locally; with none left, no timer is left behind. */
  forget(): void {
    if (--this.watched === 0) this.stop();
  }

  /** The timer fires by `at` (wait clock): after it fired, for the earliest limit still watched (Infinity: none). */
  arm(at: number): void {
    if (at >= this.armedAt) return;
    this.timer?.unsubscribe();
    this.armedAt = at;
    this.timer = this.clock.timers.schedule(
      () => {
        this.timer = undefined;
        this.armedAt = Infinity;
        this.due(this.clock.now());
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  /** Nobody left to watch (the gate is forgotten or closed): no timer holds the gate any more. */
  stop(): void {
    this.timer?.unsubscribe();
    this.timer = undefined;
    this.armedAt = Infinity;
  }
}
