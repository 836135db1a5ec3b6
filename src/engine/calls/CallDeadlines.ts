/**
 * Time limits of a locker's store calls. Every call of one locker has the same limit
 * (`commandTimeout`), so deadlines come due in the order the calls were made: a FIFO with a
 * single timer armed for its head replaces a timer per call (which cost a quarter of the
 * engine's own time on the acquire + release path). The calls themselves are the FIFO's entries,
 * so tracking one allocates nothing.
 *
 * The timer is unref'd: it never keeps the process alive by itself. A pending store call that
 * could still be answered has I/O of its own (a socket) that does.
 */

/** A call with a deadline: `settled` once it was answered, abandoned or expired. */
export interface Tracked {
  settled: boolean;
  /** `performance.now()` when the limit passes (set by {@link CallDeadlines.track}). */
  dueAt: number;
  /** The next call in the FIFO (maintained by {@link CallDeadlines}). */
  next: Tracked | undefined;
  /** The limit passed with the call unanswered. */
  expire(): void;
}

export class CallDeadlines {
  private head: Tracked | undefined;
  private tail: Tracked | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly timeoutMs: number) {}

  /** Expires `call` in `timeoutMs` from `now` unless it is settled first. */
  track(call: Tracked, now: number = performance.now()): void {
    call.dueAt = now + this.timeoutMs;
    call.next = undefined;
    if (this.tail === undefined) this.head = call;
    else this.tail.next = call;
    this.tail = call;
    if (this.timer === undefined) this.arm(this.timeoutMs);
  }

  /**
   * Marks `call` as answered (or abandoned) so it never expires. Calls are mostly answered in the
   * order they were made, so answered calls leave the head of the queue at once and it stays as
   * short as the number of calls in flight.
   */
  settle(call: Tracked): void {
    call.settled = true;
    let head = this.head;
    while (head?.settled) head = this.unlink(head);
    this.head = head;
    if (head === undefined) this.tail = undefined;
  }

  /**
   * Takes `call` (the head) off the queue and returns the next one. A call off the queue must
   * not point into it: anything that still holds an old call (a session, a lease's handlers)
   * would otherwise hold every call made since, with their handlers and leases, through the
   * chain of `next` — at tens of thousands of calls a second that kept a fifth of all the
   * engine allocated alive past each young-generation collection, and collecting it cost more
   * CPU than the rest of the engine.
   */
  private unlink(call: Tracked): Tracked | undefined {
    const next = call.next;
    call.next = undefined;
    return next;
  }

  private arm(delay: number): void {
    // (expire() runs handlers that may track new calls, and so arm, before it re-arms itself)
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(this.expire, delay);
    this.timer.unref?.();
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    let call = this.head;
    // Drop answered calls, expire overdue ones, stop at the first call still within its limit.
    // Each call leaves the queue before its handlers run: they may track new calls or settle
    // others, and must find the queue as it is.
    while (call !== undefined && (call.settled || call.dueAt <= now)) {
      const overdue = !call.settled;
      call.settled = true;
      this.head = this.unlink(call);
      if (this.head === undefined) this.tail = undefined;
      if (overdue) call.expire();
      call = this.head;
    }
    if (call !== undefined) this.arm(Math.max(0, call.dueAt - now));
  };
}
