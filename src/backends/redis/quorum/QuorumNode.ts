/**
 * One node of a quorum store: an independent Redis master, with the keys, reserved namespace and
 * data-loss-safe fences of a single-node {@link RedisLockStore} (through which it extends and checks
 * keys), its own scripts for acquire and release (no line: ../protocol/lua/quorumAcquire-4.lua), every call
 * bounded by the per-node timeout and answered as a value or as the reason it failed — never a
 * rejection, so a dead node cannot fail a round that a quorum can decide.
 */
import { LockOptionsError } from '../../../errors/errors.js';
import type { ReleasedGrant } from '../../../store/LockStore.js';
import { releaseArgs } from '../protocol/codec.js';
import { runScript } from '../protocol/commands.js';
import { holdWritesForTick } from '../protocol/tickWrites.js';
import { helperKey } from '../protocol/keyLayout.js';
import type { RedisClient } from '../RedisClient.js';
import { RedisLockStore } from '../RedisLockStore.js';

/**
 * What a quorum store needs of an ioredis `Redis` client (ioredis 5 or 6), beyond what the Redis
 * store needs: its address (to name it in errors and refuse one server twice) and its connection
 * state. Declared structurally so the core never imports ioredis at run time.
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import type { QuorumClient } from 'rxjs-lock/redis';
 *
 * const node: QuorumClient = new Redis(6380, '127.0.0.1');
 * ```
 */
export interface QuorumClient extends RedisClient {
  readonly options?: {
    readonly keyPrefix?: string;
    readonly host?: string;
    readonly port?: number;
    readonly path?: string;
    readonly name?: string;
    readonly sentinels?: ReadonlyArray<unknown> | null;
  };
  /** The connection's state (ioredis: `'ready'` when commands go out at once). */
  readonly status?: string;
  on?(event: 'error', listener: (error: Error) => void): unknown;
  on?(event: 'ready' | 'close', listener: () => void): unknown;
  removeListener?(event: 'error' | 'ready', listener: (error: Error) => void): unknown;
  listenerCount?(event: 'error'): number;
}

/**
 * A node's answer to a quorum acquire (../protocol/lua/quorumAcquire-4.lua): its block of fences,
 * its clock's seed when it granted, and what the key has left; or the holder's TTL when refused.
 */
export type NodeAcquire =
  | {
      readonly acquired: true;
      readonly fence: number;
      readonly fences: number;
      readonly seed: number;
      readonly ttl: number;
      /** Another token was refused the key on this node lately (within 100 ms). */
      readonly othersRefused?: true;
    }
  | { readonly acquired: false; readonly holderTtl?: number };

/** A node's answer to one call: its value, or why it gave none in time. */
export type NodeAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/**
 * Runs `then` once `timeoutMs` passed and the I/O of that turn of the event loop was read
 * (setImmediate runs after it): after a stall of this process longer than the timeout (a GC pause,
 * a long task), an answer that arrived meanwhile is read before the timer could call a node silent.
 */
export function afterTimeout(timeoutMs: number, then: () => void): ReturnType<typeof setTimeout> {
  return setTimeout(() => setImmediate(then), timeoutMs);
}

/** How a node is named in errors: `host:port`, the socket path, or the Sentinel master's name. */
export function nodeName(client: QuorumClient): string {
  const options = client.options ?? {};
  if (typeof options.path === 'string' && options.path !== '') return options.path;
  if (Array.isArray(options.sentinels) && options.sentinels.length > 0) return `sentinel master ${String(options.name)}`;
  return `${options.host ?? 'localhost'}:${options.port ?? 6379}`;
}

export class QuorumNode {
  readonly name: string;
  readonly store: RedisLockStore;
  private readonly clientPrefix: string;
  /** The connection's last error since it was last ready, when the client reports errors to anyone. */
  private lastError: string | undefined;
  private readonly detach: (() => void) | undefined;

  constructor(
    readonly client: QuorumClient,
    private readonly timeoutMs: number,
    /** The node's place in the store's list of clients. */
    readonly index: number,
    /** Whether the calls of one tick to this node leave in one write (the store's `coalesceWrites`). */
    private readonly coalesceWrites = true,
  ) {
    if (client.isCluster === true)
      throw new LockOptionsError(
        `clients[${index}]`,
        'an ioredis Redis client of one independent master (not a Cluster: its masters are not independent)',
        client,
      );
    this.name = nodeName(client);
    // No wake-up (the quorum store has no line), so the node store opens no connection of its own.
    try {
      this.store = new RedisLockStore(client, { wakeUp: false, coalesceWrites });
    } catch (error) {
      if (error instanceof LockOptionsError)
        throw new LockOptionsError(`clients[${index}]${error.option === 'client' ? '' : ` (${error.option})`}`, error.allowed, error.received);
      throw error;
    }
    this.clientPrefix = client.options?.keyPrefix ?? '';
    // Why a node is down is worth naming ("connect ECONNREFUSED …"): the connection's errors say it.
    // Listened to only when someone else listens already, since a listener of ours would silence
    // ioredis' own "Unhandled error event" output for a client that has none.
    if (typeof client.on === 'function' && typeof client.removeListener === 'function' && (client.listenerCount?.('error') ?? 0) > 0) {
      const onError = (error: Error): void => {
        this.lastError = error.message;
      };
      const onReady = (): void => {
        this.lastError = undefined;
      };
      client.on('error', onError);
      client.on('ready', onReady);
      this.detach = () => {
        client.removeListener!('error', onError);
        client.removeListener!('ready', onReady);
      };
    }
  }

  /** `run()` on this node within the per-node timeout; never rejects. */
  call<T>(run: () => Promise<T>): Promise<NodeAnswer<T>> {
    return new Promise((resolve) => {
      let done = false;
      const timer = afterTimeout(this.timeoutMs, () => {
        if (done) return;
        done = true;
        resolve(this.silence());
      });
      void this.answer(run).then((answer) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(answer);
      });
    });
  }

  /** `run()` on this node, its value or why it failed, with no timeout of its own; never rejects. */
  answer<T>(run: () => Promise<T>): Promise<NodeAnswer<T>> {
    let promise: Promise<T>;
    try {
      promise = Promise.resolve(run());
    } catch (error) {
      promise = Promise.reject(error);
    }
    return promise.then(
      (value): NodeAnswer<T> => ({ ok: true, value }),
      (error: unknown) => this.failure(error),
    );
  }

  /** The answer of a call that failed with `error`. */
  failure(error: unknown): NodeAnswer<never> {
    return { ok: false, reason: `failed: ${error instanceof Error ? error.message : String(error)}${this.connectionState()}` };
  }

  /** The answer of a node that gave none within the timeout. */
  silence(): NodeAnswer<never> {
    return { ok: false, reason: `gave no answer within ${this.timeoutMs} ms${this.connectionState()}` };
  }

  /**
   * Sets `key` for `token` on this node if it is free, with a block of `fences` fences starting at
   * `floor` or above (../protocol/lua/quorumAcquire-4.lua; 0: no floor). A refusal notes `token`,
   * and with `inbox` (the channel where the release hints it; '' for none) where it listens.
   */
  acquire(key: string, token: string, ttlMs: number, fences: number, floor: number, inbox: string): Promise<NodeAcquire> {
    const args = inbox === '' ? [token, ttlMs, fences, floor] : [token, ttlMs, fences, floor, inbox];
    this.holdWrites();
    return runScript(this.client, 'quorumAcquire', [key, this.fenceKey(key), this.helper(key, 'refused'), this.helper(key, 'hint')], args).then((reply) =>
      decodeNodeAcquire(reply, ttlMs, fences, floor),
    );
  }

  /**
   * Gives `key` up on this node if `token` holds it (../protocol/lua/quorumRelease-3.lua); true when
   * it did. The acquisition that listens and was refused the key last (within 2 s) is hinted that
   * it is free.
   */
  release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
    this.holdWrites();
    return runScript(this.client, 'quorumRelease', [key, this.fenceKey(key), this.helper(key, 'hint')], releaseArgs(token, grant, performance.now())).then(
      (reply) => reply === 1,
    );
  }

  /**
   * Raises the fence record of `key` on this node to `last` (see ../protocol/lua/raiseFence-1.lua):
   * rejects when the node refuses a value too far ahead of its clock.
   */
  raiseFence(key: string, last: number): Promise<unknown> {
    this.holdWrites();
    return runScript(this.client, 'raiseFence', [this.fenceKey(key)], [String(last)]);
  }

  /** Holds this tick's later writes to the node back to the end of the tick (`coalesceWrites`). */
  private holdWrites(): void {
    if (this.coalesceWrites) holdWritesForTick(this.client);
  }

  private fenceKey(key: string): string {
    return helperKey(key, 'fence', this.clientPrefix);
  }

  private helper(key: string, kind: 'refused' | 'hint'): string {
    return helperKey(key, kind, this.clientPrefix);
  }

  /** Stops listening to the client's connection errors. */
  close(): void {
    this.detach?.();
  }

  /** `' (connection reconnecting: connect ECONNREFUSED …)'` when the connection is not ready. */
  private connectionState(): string {
    const status = this.client.status;
    if (status === undefined || status === 'ready') return '';
    return ` (connection ${status}${this.lastError === undefined ? '' : `: ${this.lastError}`})`;
  }
}

/**
 * The acquire script's reply to a call that asked for `ttlMs`, `fences` and `floor` (integers, as
 * the store sends them): a bare integer when the call took the free key with that TTL and all the
 * fences it asked for — the node's seed when the block starts at its clock (the fence is the seed
 * + 1), minus the seed when it starts at the floor (the fence is the floor); else `{fence, fences,
 * seed, ttl}`, or `{0, holder's pttl}` when refused.
 */
export function decodeNodeAcquire(reply: unknown, ttlMs: number, fences: number, floor: number): NodeAcquire {
  if (typeof reply === 'number') {
    return reply > 0
      ? { acquired: true, fence: reply + 1, fences, seed: reply, ttl: ttlMs }
      : { acquired: true, fence: floor, fences, seed: -reply, ttl: ttlMs };
  }
  const r = reply as number[];
  if (r[0] === 0) return r[1]! >= 0 ? { acquired: false, holderTtl: r[1]! } : { acquired: false };
  const grant = { acquired: true, fence: r[0]!, fences: r[1]!, seed: r[2]!, ttl: Math.max(0, r[3]!) } as const;
  return r[4] === 1 ? { ...grant, othersRefused: true } : grant;
}
