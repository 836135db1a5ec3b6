export { instrumentLocker, type InstrumentLockerOptions, type LockerInstrumentation } from './instrumentLocker.js';
export type { AcquisitionOutcome, ReleaseOutcome } from './lockMetrics.js';
