/**
 * Whether a locker met contention lately: a store refused one of its sessions less than
 * {@link CONTENTION_MEMORY_MS} ago. Its new sessions then listen for wake-up first and queue with
 * their first attempt, instead of spending one attempt to learn that the key is held (a gate is
 * gone once its key is free, so it cannot remember this itself).
 */

/** How long a refusal by the store makes a locker count as contended. */
export const CONTENTION_MEMORY_MS = 2000;

export class ContentionMemory {
  private until = 0;

  /** A store refused one of this locker's sessions. */
  note(): void {
    this.until = performance.now() + CONTENTION_MEMORY_MS;
  }

  get recent(): boolean {
    return this.until !== 0 && performance.now() < this.until;
  }
}
