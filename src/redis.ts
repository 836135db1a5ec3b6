/** `rxjs-lock/redis`: the Redis store and the fenced resource (need `ioredis`, a peer dependency). */
export { RedisLockStore, type RedisLockStoreOptions } from './backends/redis/RedisLockStore.js';
export { FencedResource, type FencedWriteResult } from './backends/redis/FencedResource.js';
export type { RedisClient, RedisPipeline, RedisTransaction, RedisSubscriber, RedisReplies } from './backends/redis/RedisClient.js';
export { scanLocks, type ScanLocksOptions, type ListedLock, type ScanningClient } from './backends/redis/scanLocks.js';
