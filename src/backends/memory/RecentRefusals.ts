/**
 * Which keys the in-memory store refused lately, and to whom: a store without a line tells a
 * grant when other acquisitions were refused the key within {@link REFUSED_LATELY_MS}
 * (`Acquired.waiting: 1`), so that the locker that gets it lets them go first when it gives it
 * back (a locker asking again at once would take it nearly every time). Memory stays bounded: a
 * key is forgotten at its next grant, and old notes are dropped once more than
 * {@link MAX_REFUSALS} are kept.
 */

/** How long a refusal counts as "lately" (longer than the default back-off between two attempts, 10–30 ms). */
export const REFUSED_LATELY_MS = 100;

/** Notes kept before old ones are dropped. */
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
    last.delete(key);
    last.set(key, new Refusal(now, token));
    if (last.size <= MAX_REFUSALS) return;
    // (in insertion order: the oldest first)
    for (const [noted, refusal] of last) {
      if (last.size <= MAX_REFUSALS / 2 && now - refusal.at < REFUSED_LATELY_MS) break;
      last.delete(noted);
    }
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
