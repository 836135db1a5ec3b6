/**
 * `rxjs-lock/testing`: tools to check mutual exclusion in your own tests, and to test your own stores.
 *
 * @module rxjs-lock/testing
 */
export { findOverlaps, monotonicNs, SectionRecorder, type CriticalSection, type Overlap } from './testing/overlapDetector.js';
export { coreOnly } from './store/capabilities.js';
