/**
 * When a locker last gave each key back to a store without a line while other processes were
 * after it (see StoreSession.start: its next session for the key lets them go first, within one
 * back-off step). Only keys the store said others were after are noted, and all notes are dropped
 * when {@link MAX_NOTED} are kept and another key comes, so memory stays bounded whatever the keys
 * (a note lost costs one turn that does not yield).
 */

/** Notes kept at most. */
export const MAX_NOTED = 256;

export class RecentGiveBacks {
  private readonly at = new Map<string, number>();

  note(storeKey: string, at: number): void {
    const noted = this.at;
    if (noted.size >= MAX_NOTED && !noted.has(storeKey)) noted.clear();
    noted.set(storeKey, at);
  }

  last(storeKey: string): number | undefined {
    return this.at.get(storeKey);
  }
}
