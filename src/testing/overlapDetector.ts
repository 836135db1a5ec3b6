/**
 * Checks mutual exclusion after the fact: critical sections are recorded as [enter, exit]
 * intervals on a clock shared by every process of the machine (`process.hrtime`, which is
 * CLOCK_MONOTONIC on Linux), then any two that intersect are an overlap.
 *
 * Record `enter` after the lock is held and `exit` before release is called, so a correct lock
 * can never produce an overlap.
 */

/**
 * One critical section: monotonic nanoseconds, and who ran it.
 *
 * @example
 * ```ts
 * const section: CriticalSection = { enter: monotonicNs(), exit: monotonicNs() + 1_000_000n, owner: 'worker-1' };
 * ```
 */
export interface CriticalSection {
  /** When the holder entered, right after the lock was held ({@link monotonicNs}). */
  readonly enter: bigint;
  /** When the holder left, before it released the lock ({@link monotonicNs}). */
  readonly exit: bigint;
  /** Who ran it (a process or worker name), to tell the two sides of an overlap apart. */
  readonly owner?: string;
}

/**
 * Monotonic machine-wide timestamp in nanoseconds, comparable across processes of one machine.
 *
 * @example
 * ```ts
 * const enter = monotonicNs();
 * await doWork();
 * sections.push({ enter, exit: monotonicNs() });
 * ```
 */
export const monotonicNs = (): bigint => process.hrtime.bigint();

/**
 * A pair of critical sections that ran at the same time.
 *
 * @example
 * ```ts
 * for (const { first, second } of findOverlaps(sections)) console.error(`${first.owner} and ${second.owner} overlapped`);
 * ```
 */
export interface Overlap {
  /** The section that entered first. */
  readonly first: CriticalSection;
  /** The section that entered while `first` had not exited. */
  readonly second: CriticalSection;
}

/**
 * Every pair of sections that ran at the same time (one entered before the other exited). An
 * empty result means no two sections ever overlapped. Sections are swept in order of entry,
 * keeping those still open, so the cost grows with how many overlap, not with all pairs.
 *
 * @example
 * ```ts
 * const recorder = new SectionRecorder('test');
 * await Promise.all([1, 2, 3].map(() => lastValueFrom(defer(async () => {
 *   const exit = recorder.enter();
 *   await setTimeout(5);
 *   exit();
 * }).pipe(locker.withLock('k')))));
 * expect(findOverlaps(recorder.sections)).toEqual([]);
 * ```
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

/**
 * Records sections in one process; `sections` can be sent to a parent that merges them.
 *
 * @example
 * ```ts
 * const recorder = new SectionRecorder(`pid ${process.pid}`);
 * await lastValueFrom(defer(async () => {
 *   const exit = recorder.enter(); // the lock is held here
 *   await writeReport();
 *   exit();                        // before the release
 * }).pipe(locker.withLock('report')));
 * process.send?.(recorder.sections.map((s) => ({ ...s, enter: String(s.enter), exit: String(s.exit) })));
 * ```
 */
export class SectionRecorder {
  /** The sections recorded so far, in the order they exited. */
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
