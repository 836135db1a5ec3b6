/**
 * What the demo's parent and worker processes tell each other over the `fork()` IPC channel.
 *
 * The handshake (worker `ready` → parent `go`) exists so that every worker starts contending at
 * the same moment: booting a TypeScript worker takes a few hundred ms, and without it the first
 * worker up would have the key to itself for a while.
 */

/** The one key every loop of every process fights over. */
export const HOT_KEY = 'demo:hot-key';

/** How long a lease lives if its holder dies without releasing, and how long a loop waits. */
export const LOCK_TTL_MS = 5_000;
export const WAIT_TIMEOUT_MS = 10_000;

/** Environment variable carrying a worker's {@link WorkerSetup}, as JSON. */
export const SETUP_ENV = 'DEMO_WORKER_SETUP';

/**
 * Given to a worker when it is forked. Passed in the environment rather than by message because a
 * message sent before the worker has finished loading would be lost.
 */
export interface WorkerSetup {
  /** 1-based, for display. */
  readonly worker: number;
  readonly redis: { readonly host: string; readonly port: number };
  readonly loops: number;
  readonly holdMs: number;
}

/** Parent → worker. */
export type ParentMessage = {
  readonly type: 'go';
  /** When to stop starting new work, as `monotonicNs()`: the clock is shared by the whole machine. */
  readonly stopAtNs: string;
};

/** What a worker hands back at the end. Bigints do not survive IPC, so timestamps are strings. */
export interface WorkerReport {
  /** `[enter, exit]` of every critical section, in `monotonicNs()`. */
  readonly sections: ReadonlyArray<readonly [string, string]>;
  /** Time from subscribing to the locked work until the work started, per acquisition, in ms. */
  readonly waitsMs: readonly number[];
  readonly timeouts: number;
  /** Commands the lock store sent to Redis (round trips), as counted on the client side. */
  readonly storeCommands: number;
}

/** Worker → parent. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'progress'; readonly acquisitions: number }
  | ({ readonly type: 'done' } & WorkerReport);
