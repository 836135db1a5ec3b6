/**
 * A key's local line: its waiters in arrival order. A doubly linked list threaded through the
 * waiters themselves, so that joining and leaving allocate nothing: a `Set` cost a table per gate,
 * an iterator per look at its head and a new table each time its last waiter left (V8 shrinks an
 * emptied table by allocating a smaller one) — on every acquisition.
 */

/** What the line threads through: each waiter's neighbours, maintained by {@link WaiterLine}. */
export interface InLine<W> {
  /** The waiter ahead of it in its line (`undefined` at the head, or when not in a line). */
  ahead: W | undefined;
  /** The waiter behind it (`undefined` at the tail, or when not in a line). */
  behind: W | undefined;
  /** Is it in a line now? */
  queued: boolean;
}

export class WaiterLine<W extends InLine<W>> {
  private first: W | undefined = undefined;
  private last: W | undefined = undefined;
  private count = 0;

  /** Waiters in line. */
  get size(): number {
    return this.count;
  }

  /** The first waiter, or `undefined` when the line is empty. */
  get head(): W | undefined {
    return this.first;
  }

  /** Joins `waiter` at the tail (a waiter is in at most one line: it must not be in one now). */
  add(waiter: W): void {
    waiter.ahead = this.last;
    waiter.behind = undefined;
    waiter.queued = true;
    if (this.last === undefined) this.first = waiter;
    else this.last.behind = waiter;
    this.last = waiter;
    this.count++;
  }

  /** Takes `waiter` out of the line; says whether it was in it (a waiter not in line is left as it is). */
  delete(waiter: W): boolean {
    if (!waiter.queued) return false;
    const { ahead, behind } = waiter;
    if (ahead === undefined) this.first = behind;
    else ahead.behind = behind;
    if (behind === undefined) this.last = ahead;
    else behind.ahead = ahead;
    waiter.ahead = undefined;
    waiter.behind = undefined;
    waiter.queued = false;
    this.count--;
    return true;
  }

  /** The waiters in line now, first to last (a copy: the line may change while it is used). */
  toArray(): W[] {
    const all: W[] = [];
    for (let w = this.first; w !== undefined; w = w.behind) all.push(w);
    return all;
  }
}
