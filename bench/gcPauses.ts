/**
 * A worker's garbage-collection pauses during a run (Node's `gc` performance entries): the
 * longest one that began after the warm-up cut, and how many were full collections. On the hot
 * key a pause of the process that holds the key, or is next for it, is added to every wait
 * behind it, whatever the library: the longest pause says how much of a max wait is that.
 */
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';

export interface GcPauses {
  /** The longest pause that began at or after the cut, ms (0 when none did). */
  readonly maxMs: number;
  /** Full (major) collections that began at or after the cut. */
  readonly majors: number;
}

/** Watches from now on; `stop()` ends the watch and tells the pauses that began `cutMs` or more after now. */
export function watchGcPauses(cutMs: number): { stop(): GcPauses } {
  const cutAt = performance.now() + cutMs;
  let maxMs = 0;
  let majors = 0;
  const count = (entries: readonly PerformanceEntry[]) => {
    for (const entry of entries) {
      if (entry.startTime < cutAt) continue;
      if (entry.duration > maxMs) maxMs = entry.duration;
      if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
    }
  };
  const observer = new PerformanceObserver((list) => count(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      // (entries queued and not delivered yet are taken now; Node queues an entry for a later
      // task, so a collection in the last moments before the stop may be missed)
      count(observer.takeRecords());
      observer.disconnect();
      return { maxMs, majors };
    },
  };
}
