// Compile-time check (tsc runs over test/): both ioredis client kinds fit the store's RedisClient,
// and a Redis fits the quorum store's QuorumClient.
import type { Cluster, Redis } from 'ioredis';
import type { QuorumClient, RedisClient } from '../../src/redis.js';

export type ClusterFits = Cluster extends RedisClient ? true : never;
export type RedisFits = Redis extends RedisClient ? true : never;
export type RedisFitsQuorum = Redis extends QuorumClient ? true : never;
export const fits: [ClusterFits, RedisFits, RedisFitsQuorum] = [true, true, true];
