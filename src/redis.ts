/** `rxjs-lock/redis`: the Redis store (needs `ioredis`, a peer dependency). */
export { RedisLockStore } from './backends/redis/RedisLockStore.js';
export type { RedisClient } from './backends/redis/RedisClient.js';
