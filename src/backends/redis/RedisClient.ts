/**
 * The part of an ioredis client (a `Redis` or a `Cluster`, ioredis 5 or 6) that the Redis store
 * uses. Declared structurally so the core never imports ioredis at run time.
 */
export interface RedisClient {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  eval(script: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  /** A batch of commands sent in one write and answered together (ioredis `pipeline()`). */
  pipeline?(): RedisPipeline;
  /** True for an ioredis `Cluster`, whose pipelines must stay within one hash slot. */
  readonly isCluster?: boolean;
}

/** The part of an ioredis pipeline the store uses. */
export interface RedisPipeline {
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): unknown;
  /** Resolves one `[error, reply]` pair per command, in order. */
  exec(): Promise<Array<[Error | null, unknown]> | null>;
}
