/**
 * The parts of an ioredis client (a `Redis` or a `Cluster`, ioredis 5 or 6) that the Redis store
 * uses. Declared structurally so the core never imports ioredis at run time.
 */
export interface RedisClient {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  eval(script: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  /** A batch of commands sent in one write and answered together (ioredis `pipeline()`). */
  pipeline?(): RedisPipeline;
  /** True for an ioredis `Cluster`, whose pipelines must stay within one hash slot. */
  readonly isCluster?: boolean;
  /** A new connection with the same options (ioredis `duplicate()`): the store's subscriber. */
  duplicate?(): RedisSubscriber;
}

/** The part of an ioredis pipeline the store uses. */
export interface RedisPipeline {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): unknown;
  /** Resolves one `[error, reply]` pair per command, in order. */
  exec(): Promise<Array<[Error | null, unknown]> | null>;
}

/** The part of an ioredis connection used to receive wake-up signals (pub/sub). */
export interface RedisSubscriber {
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  disconnect(): void;
}
