/**
 * Listing the shared locks (semaphores, read-write locks) held in a Redis, for operators (`npx
 * rxjs-lock inspect`), beside {@link scanLocks}'s mutexes. A shared lock has no key of its own
 * name: its holders live in a sorted set among the store's helper keys (see
 * protocol/lua/lib/shared.lua). So this SCANs (never KEYS) for those sets, reads the lock key back
 * out of each name (checked by computing the name again), keeps the ones under `keyPrefix` whose
 * rest matches `pattern` (Redis's glob, matched here: the name holds more than the key), and
 * inspects each (see ./sharedInspection.ts): permits used, live holders (token, permits, TTL,
 * fence), live waiters. Read-only. On a Cluster every master is scanned.
 */
import type { SharedLockInfo } from '../../store/SharedLockStore.js';
import { globMatch } from './protocol/globMatch.js';
import { lockKeyOfHelper, RESERVED_PREFIX, sharedKeys } from './protocol/keyLayout.js';
import { escapeGlob, type ScanLocksOptions, type ScanningClient } from './scanLocks.js';
import { inspectSharedLock } from './sharedInspection.js';

/**
 * A shared lock found by {@link scanSharedLocks}: it has live holders or waiters.
 *
 * @example
 * ```ts
 * for await (const lock of scanSharedLocks(new Redis(), { pattern: 'renderer*' })) {
 *   const listed: ListedSharedLock = lock;
 *   console.log(`${listed.key}: ${listed.used} permit(s) used by ${listed.holders.length} holder(s), ${listed.waiting} waiting`);
 * }
 * ```
 */
export interface ListedSharedLock extends SharedLockInfo {
  /** The key as the locker names it (without `clientPrefix` and `keyPrefix`). */
  readonly key: string;
  /** The Redis name of its holders' sorted set. */
  readonly redisKey: string;
}

/**
 * Yields every shared lock with live holders under `keyPrefix` whose key matches `pattern`, one
 * SCAN batch at a time (a lock taken or given up during the scan may or may not be listed, as SCAN
 * promises). Options as {@link scanLocks}'. Read-only: it takes nothing and changes no key.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { scanSharedLocks } from 'rxjs-lock/redis';
 *
 * const redis = new Redis();
 * for await (const lock of scanSharedLocks(redis, { pattern: 'renderer*' })) {
 *   console.log(lock.key, `${lock.used} permits held`, lock.holders.map((h) => h.token), `${lock.waiting} waiting`);
 * }
 * await redis.quit();
 * ```
 */
export async function* scanSharedLocks(client: ScanningClient, options: ScanLocksOptions = {}): AsyncGenerator<ListedSharedLock> {
  const { pattern = '*', keyPrefix = 'lock:', clientPrefix = '', count = 500 } = options;
  const match = `${escapeGlob(`${clientPrefix}${RESERVED_PREFIX}shared-holders:`)}*`;
  const nodes = client.isCluster === true && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, names] = await node.scan(cursor, 'MATCH', match, 'COUNT', count, 'TYPE', 'zset');
      cursor = next;
      for (const redisKey of names) {
        if (!redisKey.startsWith(clientPrefix)) continue;
        const lockKey = lockKeyOfHelper(redisKey.slice(clientPrefix.length), 'shared-holders', clientPrefix);
        if (lockKey === undefined || !lockKey.startsWith(keyPrefix) || !globMatch(pattern, lockKey.slice(keyPrefix.length))) continue;
        // (as the store's client names them, with that client's prefix in front)
        const [holders, permits, line, places, fence] = sharedKeys(lockKey, clientPrefix).map((name) => clientPrefix + name) as [
          string,
          string,
          string,
          string,
          string,
        ];
        const info = await inspectSharedLock(client, [holders, permits, line, places, fence]);
        if (info !== null) yield { key: lockKey.slice(keyPrefix.length), redisKey, ...info };
      }
    } while (cursor !== '0');
  }
}
