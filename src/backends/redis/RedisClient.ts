/**
 * The parts of an ioredis client (a `Redis` or a `Cluster`, ioredis 5 or 6) that the Redis store
 * uses. Declared structurally so the core never imports ioredis at run time.
 *
 * @example
 * ```ts
 * import { Cluster, Redis } from 'ioredis';
 *
 * // an ioredis Redis or Cluster is a RedisClient as it is: nothing to adapt
 * const client: RedisClient = new Redis({ host: 'redis.internal' });
 * const clustered: RedisClient = new Cluster([{ host: 'redis-0.internal', port: 6379 }]);
 * const store = new RedisLockStore(client);
 * ```
 */
export interface RedisClient {
  /**
   * Registers a Lua script as a command of this client (ioredis `defineCommand`): it is then
   * called by SHA, sent as EVAL first on each connection and again after NOSCRIPT, and is
   * available on the client's pipelines too.
   */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number; readOnly?: boolean }): void;
  /**
   * Redis `EVAL script numkeys key… arg…` (ioredis applies its `keyPrefix` to the keys): how the
   * store calls a script whose last call failed, until one succeeds. Without it, such calls go as
   * the command registered with `defineCommand` too.
   */
  eval?(script: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  /** A transaction (MULTI … EXEC) sent in one write. */
  multi(): RedisTransaction;
  /** A batch of commands sent in one write and answered together (ioredis `pipeline()`). */
  pipeline(): RedisPipeline;
  /** True for an ioredis `Cluster`, whose pipelines must stay within one hash slot. */
  readonly isCluster?: boolean;
  /** The client's options; `keyPrefix` is prepended to every key it sends. */
  readonly options?: { readonly keyPrefix?: string };
  /** A new connection with the same options (ioredis `duplicate()`): the store's subscriber. */
  duplicate?(): RedisSubscriber;
  /**
   * Redis `WAIT numreplicas timeout` on the client's connection: how many replicas acknowledged
   * this connection's writes so far (the store's `replicaAcks` option).
   */
  wait?(numreplicas: number, timeout: number): Promise<number>;
  /** Connection events (an ioredis client is an EventEmitter): `replicaAcks` notes each close. */
  on?(event: 'close', listener: () => void): unknown;
  /** Stops a listener added with `on`. */
  off?(event: 'close', listener: () => void): unknown;
  /**
   * A Cluster's slot table: for each hash slot, the keys (`host:port`) of the nodes serving it,
   * master first. The store groups batched renewals by it.
   */
  readonly slots?: ReadonlyArray<readonly string[] | undefined>;
}

/**
 * Answers of a pipeline or transaction: one `[error, reply]` pair per command, in order.
 *
 * @example
 * ```ts
 * const replies: RedisReplies = await redis.pipeline().get('a').pttl('a').exec();
 * for (const [error, reply] of replies ?? []) if (error) console.error(error); else console.log(reply);
 * ```
 */
export type RedisReplies = Array<[Error | null, unknown]> | null;

/**
 * The part of an ioredis pipeline the store uses (the scripts it defined are on it too).
 *
 * @example
 * ```ts
 * const pipeline: RedisPipeline = new Redis().pipeline(); // ioredis' pipeline is one
 * const replies = await pipeline.exec();
 * ```
 */
export interface RedisPipeline {
  exec(): Promise<RedisReplies>;
}

/**
 * The commands of a MULTI the store sends: plain commands, never scripts (see leave).
 *
 * @example
 * ```ts
 * const tx: RedisTransaction = new Redis().multi(); // ioredis' MULTI is one
 * const replies = await tx.get('lock:a').pttl('lock:a').exec(); // [[null, 'token-1'], [null, 4200]]
 * ```
 */
export interface RedisTransaction {
  zrem(key: string, member: string): RedisTransaction;
  hdel(key: string, field: string): RedisTransaction;
  get(key: string): RedisTransaction;
  hget(key: string, field: string): RedisTransaction;
  pttl(key: string): RedisTransaction;
  exec(): Promise<RedisReplies>;
}

/**
 * The part of an ioredis connection used to receive wake-up signals (pub/sub).
 *
 * @example
 * ```ts
 * const redis = new Redis();
 * const subscriber: RedisSubscriber = redis.duplicate(); // a connection of its own, for pub/sub only
 * const store = new RedisLockStore(redis, { subscriber });
 * ```
 */
export interface RedisSubscriber {
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'close' | 'ready', listener: () => void): unknown;
  disconnect(): void;
}

/**
 * An ioredis `Cluster` made with the `shardedSubscribers` option: sharded pub/sub, one subscriber
 * connection per master, re-subscribed after slot moves and failovers.
 */
export interface ShardSubscriber {
  ssubscribe(...channels: string[]): Promise<unknown>;
  sunsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: '-subscriber' | 'subscribersReady', listener: () => void): unknown;
  disconnect(): void;
}
