/** What the event-pipeline parent and its consumer processes say to each other (over IPC). */

/** A consumer's settings, as JSON in the environment variable {@link CONSUMER_ENV}. */
export interface ConsumerSettings {
  readonly host: string;
  readonly port: number;
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** A pending message idle this long (ms) is taken over from its consumer (XAUTOCLAIM). */
  readonly claimIdleMs: number;
  /** Messages processed at once by one consumer (over all accounts). */
  readonly concurrency: number;
  /** Time spent between reading a balance and writing it back, in ms: widens the race a lock must close. */
  readonly workMs: number;
  /**
   * Take the locks on an in-memory store of each process instead of Redis: what the free
   * `withLock` does before `setDefaultLocker`. No exclusion across processes: the suite runs it
   * once to show that the end check catches the lost updates.
   */
  readonly inMemoryLocks?: boolean;
}

export const CONSUMER_ENV = 'EVENT_PIPELINE_CONSUMER';

/** Consumer → parent. */
export type ConsumerMessage =
  | { readonly type: 'ready' }
  /** A message was applied to its account (its idempotency record written). */
  | { readonly type: 'applied'; readonly id: string }
  /** A message arrived again (claimed from a dead consumer, or redelivered) and was already applied: acknowledged only. */
  | { readonly type: 'duplicate'; readonly id: string }
  /** Pending messages taken over from another consumer with XAUTOCLAIM. */
  | { readonly type: 'claimed'; readonly count: number }
  /** A message's processing failed (LockTimeoutError, LockLostError, …): it stays pending and is claimed again later. */
  | { readonly type: 'failed'; readonly id: string; readonly error: string }
  | { readonly type: 'stopped' };

/**
 * Parent → consumer: `start` once every consumer is ready (begin reading, so that none takes the
 * whole stream before the others are up); `stop`: stop reading, finish what was read, close
 * everything and exit.
 */
export type ParentMessage = { readonly type: 'start' } | { readonly type: 'stop' };

/** Redis keys of the example. */
export const keys = {
  balance: (account: string) => `balance:${account}`,
  /** The idempotency record of one stream message: written in the same critical section as its update. */
  applied: (id: string) => `applied:${id}`,
  /** Every applied message id, in the order applied (the end check counts it). */
  log: 'applied-log',
};
