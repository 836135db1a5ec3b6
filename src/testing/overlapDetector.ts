/**
 * Checks mutual exclusion after the fact: critical sections are recorded as [enter, exit]
 * intervals on a clock shared by every process of the machine (`process.hrtime`, which is
 * CLOCK_MONOTONIC on Linux), then any two that intersect are an overlap.
 *
 * Record `enter` after the lock is held and `exit` before release is called, so a correct lock
 * can never produce an overlap.
 */

/** One critical section: monotonic nanoseconds, and who ran it. */
export interface CriticalSection {
  readonly enter: bigint;
  readonly exit: bigint;
  readonly owner?: string;
}

/** Monotonic machine-wide timestamp in nanoseconds, comparable across processes of one machine. */
export const monotonicNs = (): bigint => process.hrtime.bigint();

/** A pair of critical sections that ran at the same time. */
export interface Overlap {
  readonly first: CriticalSection;
  readonly second: CriticalSection;
}

/**
 * Every pair of sections that ran at the same time (one entered before the other exited). An
 * empty result means no two sections ever overlapped. Sections are swept in order of entry,
 * keeping those still open, so the cost grows with how many overlap, not with all pairs.
 */
export function findOverlaps(sections: readonly CriticalSection[]): Overlap[] {
  const sorted = [...sections].sort((a, b) => (a.enter < b.enter ? -1 : a.enter > b.enter ? 1 : 0));
  const overlaps: Overlap[] = [];
  let open: CriticalSection[] = [];
  for (const section of sorted) {
    open = open.filter((earlier) => earlier.exit > section.enter);
    for (const earlier of open) overlaps.push({ first: earlier, second: section });
    open.push(section);
  }
  return overlaps;
}

/** Records sections in one process; `sections` can be sent to a parent that merges them. */
export class SectionRecorder {
  readonly sections: CriticalSection[] = [];
  constructor(private readonly owner?: string) {}

  /** Call inside the critical section, right after the lock is held; returns the exit callback. */
  enter(): () => void {
    const enter = monotonicNs();
    return () => {
      this.sections.push({ enter, exit: monotonicNs(), owner: this.owner });
    };
  }
}
