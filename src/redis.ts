/**
 * `rxjs-lock/redis`: the Redis store, the quorum (Redlock) store and the fenced resource (need `ioredis`, a peer dependency).
 *
 * @module rxjs-lock/redis
 */
export { RedisLockStore, type RedisLockStoreOptions } from './backends/redis/RedisLockStore.js';
export { RedlockStore } from './backends/redis/quorum/RedlockStore.js';
export type { RedlockStoreOptions } from './backends/redis/quorum/RedlockStoreOptions.js';
export type { QuorumClient } from './backends/redis/quorum/QuorumNode.js';
export { FencedResource, type FencedWriteResult } from './backends/redis/FencedResource.js';
export type { ReplicaAcksOptions } from './backends/redis/ReplicaAcks.js';
export type { RedisClient, RedisPipeline, RedisTransaction, RedisSubscriber, RedisReplies } from './backends/redis/RedisClient.js';
export { scanLocks, type ScanLocksOptions, type ListedLock, type ScanningClient } from './backends/redis/scanLocks.js';
export { scanSharedLocks, type ListedSharedLock } from './backends/redis/scanSharedLocks.js';
