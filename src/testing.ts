/** `rxjs-lock/testing`: tools to check mutual exclusion in your own tests. */
export { findOverlaps, monotonicNs, SectionRecorder, type CriticalSection, type Overlap } from './testing/overlapDetector.js';
