/**
 * Time limits of a locker's store calls. Every call of one locker has the same limit
 * (`commandTimeout`), so deadlines come due in the order the calls were made: a FIFO with a
 * single timer armed for its head replaces a timer per call (which cost a quarter of the
 * engine's own time on the acquire + release path).
 *
 * The timer is unref'd: it never keeps the process alive by itself. A pending store call that
 * could still be answered has I/O of its own (a socket) that does.
 */

/** One tracked call: `settled` once it was answered, abandoned or expired. */
export interface Deadline {
  readonly settled: boolean;
}

interface Entry {
  settled: boolean;
  readonly dueAt: number;
  onExpire: (() => void) | undefined;
  next: Entry | undefined;
}

export class CallDeadlines {
  private head: Entry | undefined;
  private tail: Entry | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly timeoutMs: number) {}

  /** Calls `onExpire` in `timeoutMs` unless the returned deadline is settled first. */
  track(onExpire: () => void): Deadline {
    const entry: Entry = { settled: false, dueAt: performance.now() + this.timeoutMs, onExpire, next: undefined };
    if (this.tail === undefined) this.head = entry;
    else this.tail.next = entry;
    this.tail = entry;
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return entry;
  }

  /**
   * Marks `deadline` as answered (or abandoned) so it never expires. Calls are mostly answered
   * in the order they were made, so answered calls leave the head of the queue at once and it
   * stays as short as the number of calls in flight.
   */
  settle(deadline: Deadline): void {
    const entry = deadline as Entry;
    entry.settled = true;
    entry.onExpire = undefined;
    let head = this.head;
    while (head !== undefined && head.settled) head = head.next;
    this.head = head;
    if (head === undefined) this.tail = undefined;
  }

  private arm(delay: number): void {
    this.timer = setTimeout(this.expire, delay);
    this.timer.unref?.();
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    let entry = this.head;
    // Drop answered calls, fire overdue ones, stop at the first call still within its limit.
    while (entry !== undefined && (entry.settled || entry.dueAt <= now)) {
      if (!entry.settled) {
        entry.settled = true;
        const onExpire = entry.onExpire!;
        entry.onExpire = undefined;
        onExpire();
      }
      entry = entry.next;
    }
    this.head = entry;
    if (entry === undefined) this.tail = undefined;
    else this.arm(Math.max(0, entry.dueAt - now));
  };
}
