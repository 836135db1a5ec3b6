/**
 * Which keys the in-memory store refused lately, and to whom: a store without a line tells a
 * grant when other acquisitions were refused the key within {@link REFUSED_LATELY_MS}
 * (`Acquired.waiting: 1`), so that the locker that gets it lets them go first when it gives it
 * back (a locker asking again at once would take it nearly every time). Memory stays bounded: a
 * key is forgotten at its next grant, and all notes are dropped when {@link MAX_REFUSALS} are kept
 * and another key comes (a note lost costs one grant that does not say so: one turn less fair).
 */

/** How long a refusal counts as "lately" (longer than the default back-off between two attempts, 10–30 ms). */
export const REFUSED_LATELY_MS = 100;

/** Notes kept at most. */
export const MAX_REFUSALS = 1024;

class Refusal {
  constructor(
    readonly at: number,
    readonly token: string,
  ) {}
}

export class RecentRefusals {
  private readonly last = new Map<string, Refusal>();

  /** `key` was refused to `token` at `now`. */
  note(key: string, token: string, now: number): void {
    const last = this.last;
    if (last.size >= MAX_REFUSALS && !last.has(key)) last.clear();
    last.set(key, new Refusal(now, token));
  }

  /** Was `key` refused to anyone but `token` within REFUSED_LATELY_MS before `now`? Forgets the key. */
  othersRefused(key: string, token: string, now: number): boolean {
    const last = this.last;
    if (last.size === 0) return false;
    const refusal = last.get(key);
    if (refusal === undefined) return false;
    last.delete(key);
    return refusal.token !== token && now - refusal.at < REFUSED_LATELY_MS;
  }
}
