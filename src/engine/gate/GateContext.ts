/**
 * What a key's gate needs from its locker: narrow parts, each with one job, instead of the whole
 * engine.
 */
import type { AcquireSettings } from '../../options/validate.js';
import type { EventReporter } from '../events/EventReporter.js';
import type { LongWaitWatch } from '../events/LongWaitMonitor.js';
import type { HandoffPolicy } from '../handoff/HandoffPolicy.js';
import type { LeaseKeeper } from '../lease/LeaseKeeper.js';
import type { SessionContext } from '../session/SessionOwner.js';
import type { Clock } from '../timing/Clock.js';

export interface GateContext {
  readonly clock: Clock;
  /** Opens and gives back store leases. */
  readonly leases: Pick<LeaseKeeper, 'open' | 'release'>;
  /** When the lock may pass locally, and how many fences a grant reserves. */
  readonly policy: HandoffPolicy;
  readonly events: EventReporter;
  /** Hears of each waiter that joins and leaves a line, to report the ones that wait long. */
  readonly longWaits: LongWaitWatch;
  /** What the gate's store sessions need. */
  readonly sessions: SessionContext;
  /** Settings of a grant nobody waits for any more. */
  readonly defaults: AcquireSettings;
}

/** Where a gate is kept while its key is in use. */
export interface GateDirectory {
  /** The gate has nothing left to do (nothing held, in flight or waiting): forget it. */
  forget(gate: object): void;
  /** This locker gave `storeKey` back to a store without a line at `at`, which had said other tokens were after it. */
  noteGiveBack(storeKey: string, at: number): void;
  /** When this locker last gave `storeKey` back so (see noteGiveBack), if it remembers. */
  lastGiveBack(storeKey: string): number | undefined;
}
