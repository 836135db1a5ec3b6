/**
 * Counts the lock keys on a Redis node, leaving out the fence counters kept beside them (they
 * never expire by design, so "no lock left behind" means no key other than those).
 */
import type { Redis } from 'ioredis';
import { FENCE_SUFFIX } from '../../src/backends/redis/RedisLockStore.js';

export async function lockKeyCount(node: Redis): Promise<number> {
  const keys = await node.keys('*');
  return keys.filter((key) => !key.endsWith(FENCE_SUFFIX)).length;
}
