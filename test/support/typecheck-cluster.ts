// Compile-time check (tsc runs over test/): both ioredis client kinds fit the store's RedisClient.
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../../src/redis.js';

export type ClusterFits = Cluster extends RedisClient ? true : never;
export type RedisFits = Redis extends RedisClient ? true : never;
export const fits: [ClusterFits, RedisFits] = [true, true];
