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
 * Every pair of consecutive (by entry) sections where the later one entered before the
 * earliest-ending-so-far one exited: a count of 0 means no two sections ever overlapped.
 */
export function findOverlaps(sections: readonly CriticalSection[]): Overlap[] {
  const sorted = [...sections].sort((a, b) => (a.enter < b.enter ? -1 : a.enter > b.enter ? 1 : 0));
  const overlaps: Overlap[] = [];
  let latest: CriticalSection | undefined;
  for (const section of sorted) {
    if (latest !== undefined && section.enter < latest.exit) overlaps.push({ first: latest, second: section });
    if (latest === undefined || section.exit > latest.exit) latest = section;
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
