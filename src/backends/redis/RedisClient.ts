/**
 * The part of an ioredis client (a `Redis` or a `Cluster`, ioredis 5 or 6) that the Redis store
 * uses. Declared structurally so the core never imports ioredis at run time.
 */
export interface RedisClient {
  set(key: string, value: string, pxToken: 'PX', milliseconds: number, nxToken: 'NX'): Promise<'OK' | null>;
  evalsha(sha: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  eval(script: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
}
