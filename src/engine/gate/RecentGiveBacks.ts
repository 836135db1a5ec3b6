/**
 * When a locker last gave each key back to a store without a line while other processes were
 * after it (see StoreSession.start: its next session for the key lets them go first). Only keys
 * given back under contention are noted; entries older than {@link RECENT_GIVE_BACK_MS} are
 * dropped once more than {@link MAX_NOTED} are kept, so memory stays bounded whatever the keys.
 */

/** How long a give-back is remembered at least (longer than any back-off step worth yielding). */
export const RECENT_GIVE_BACK_MS = 1_000;

/** Notes kept before the old ones are dropped. */
export const MAX_NOTED = 256;

export class RecentGiveBacks {
  private readonly at = new Map<string, number>();

  note(storeKey: string, at: number): void {
    const noted = this.at;
    noted.delete(storeKey);
    noted.set(storeKey, at);
    if (noted.size <= MAX_NOTED) return;
    // (in insertion order: the oldest first)
    for (const [key, when] of noted) {
      if (noted.size <= MAX_NOTED / 2 && at - when < RECENT_GIVE_BACK_MS) break;
      noted.delete(key);
    }
  }

  last(storeKey: string): number | undefined {
    return this.at.get(storeKey);
  }
}
