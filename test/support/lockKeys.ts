/**
 * Counts the lock keys on a Redis node: every key outside the store's own namespace (its helper
 * keys: fence counters, lines, places, which are short-lived by design).
 */
import type { Redis } from 'ioredis';
import { RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';

export async function lockKeyCount(node: Redis): Promise<number> {
  const keys = await node.keys('*');
  return keys.filter((key) => !key.startsWith(RESERVED_PREFIX)).length;
}

/** Every key on the node, the store's helper keys included. */
export async function allKeys(node: Redis): Promise<string[]> {
  return (await node.keys('*')).sort();
}
