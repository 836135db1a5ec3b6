/**
 * Which connection of an ioredis Cluster a script on a key is written to: the connection to the
 * master that serves the key's hash slot, as the client's slot table says (a script is not a
 * read-only command, so ioredis sends it to the master whatever `scaleReads` says). The store holds
 * that connection's writes to the end of the tick (./tickWrites.ts).
 *
 * It reads two parts of the Cluster client that ioredis does not declare public: its slot table
 * (`slots`, which the store reads already to group renewals by node) and its pool of node
 * connections (`connectionPool.getInstanceByKey`, in ioredis 5 and 6). A client without them, a
 * slot the table does not know yet, or a node not connected yet answers `undefined`: the command
 * is then written as ioredis writes it, at once.
 */
/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from '../RedisClient.js';

/** The parts of an ioredis Cluster read here. */
interface ClusterInternals {
  readonly slots?: ReadonlyArray<readonly string[] | undefined>;
  readonly connectionPool?: { getInstanceByKey?(nodeKey: string): unknown };
}

/**
 * The connection of `cluster` to the master serving `redisKey` (the key as Redis sees it: with
 * the client's `keyPrefix`), or `undefined` when the client does not say.
 *
 * @example
 * ```ts
 * const connection = masterConnectionOf(cluster, 'lock:orders:42');
 * if (connection !== undefined) holdWritesForTick(connection);
 * ```
 */
export function masterConnectionOf(cluster: RedisClient, redisKey: string): RedisClient | undefined {
  const { slots, connectionPool } = cluster as ClusterInternals;
  const nodeKey = slots?.[calculateSlot(redisKey)]?.[0];
  if (nodeKey === undefined || typeof connectionPool?.getInstanceByKey !== 'function') return undefined;
  const connection = connectionPool.getInstanceByKey(nodeKey);
  return typeof connection === 'object' && connection !== null ? (connection as RedisClient) : undefined;
}
