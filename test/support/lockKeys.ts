/** The keys on a Redis node, as the tests look at them. */
import type { Redis } from 'ioredis';
import { RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';

/**
 * Counts the lock keys on a Redis node: every key outside the store's own namespace (its helper
 * keys: fence counters, lines, places, which are short-lived by design).
 */
export async function lockKeyCount(node: Redis): Promise<number> {
  const keys = await node.keys('*');
  return keys.filter((key) => !key.startsWith(RESERVED_PREFIX)).length;
}

/** Every key on the node, the store's helper keys included. */
export async function allKeys(node: Redis): Promise<string[]> {
  return (await node.keys('*')).sort();
}

/**
 * Keys still alive on `node`. KEYS also lists keys whose TTL has passed until Redis's active
 * expiry (10 times a second) reaps them; EXISTS on each expires those at once.
 */
export async function liveKeysOf(node: Redis): Promise<string[]> {
  const keys = await node.keys('*');
  const alive = await Promise.all(keys.map(async (key) => ((await node.exists(key)) === 1 ? key : undefined)));
  return alive.filter((key): key is string => key !== undefined);
}
