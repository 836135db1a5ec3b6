/** `rxjs-lock/redis`: the Redis store and the fenced resource (need `ioredis`, a peer dependency). */
export { RedisLockStore } from './backends/redis/RedisLockStore.js';
export { FencedResource, type FencedWriteResult } from './backends/redis/FencedResource.js';
export type { RedisClient, RedisPipeline } from './backends/redis/RedisClient.js';
