/**
 * Listing the locks held in a Redis, for operators (`npx rxjs-lock inspect`): SCAN (never KEYS,
 * which blocks the server) for string keys under the locker's `keyPrefix` that match a pattern,
 * skipping the store's own helper keys (the reserved `rxjs-lock:` namespace), and inspect each
 * (see ./inspection.ts): holder token, remaining TTL, fence when Redis keeps it, live waiters.
 * On a Cluster every master is scanned.
 */
import type { LockInfo } from '../../store/capabilities.js';
import { inspectLock } from './inspection.js';
import { lockKeys, RESERVED_PREFIX } from './protocol/keyLayout.js';
import type { RedisClient } from './RedisClient.js';

/** The parts of an ioredis `Redis` or `Cluster` that listing uses. */
export interface ScanningClient extends RedisClient {
  scan(cursor: string, ...args: Array<string | number>): Promise<[cursor: string, keys: string[]]>;
  /** A Cluster's nodes (ioredis `Cluster.nodes('master')`). */
  nodes?(role: 'master'): ScanningClient[];
}

/** Options of {@link scanLocks}. */
export interface ScanLocksOptions {
  /**
   * A Redis glob (`*`, `?`, `[…]`) on the key as the locker names it, after `keyPrefix`.
   * @default '*'
   */
  pattern?: string;
  /**
   * The locker's `keyPrefix` (with the ioredis `keyPrefix` of the application's client in front,
   * if it has one): only keys under it are listed, and it is cut from the names listed.
   * @default 'lock:'
   */
  keyPrefix?: string;
  /**
   * The SCAN `COUNT` hint: keys looked at per round trip.
   * @default 500
   */
  count?: number;
}

/** A held lock found by {@link scanLocks}. */
export interface ListedLock extends LockInfo {
  /** The key as the locker names it (without `keyPrefix`). */
  readonly key: string;
  /** The key as Redis names it. */
  readonly redisKey: string;
}

/**
 * Yields every held lock under `keyPrefix` whose key matches `pattern`, one SCAN batch at a time
 * (a key that is set or deleted during the scan may or may not be listed, as SCAN promises).
 * Read-only: it takes no lock and changes no key.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { scanLocks } from 'rxjs-lock/redis';
 *
 * const redis = new Redis();
 * for await (const lock of scanLocks(redis, { pattern: 'order:*' })) {
 *   console.log(lock.key, lock.token, lock.ttl, lock.waiting);
 * }
 * await redis.quit();
 * ```
 */
export async function* scanLocks(client: ScanningClient, options: ScanLocksOptions = {}): AsyncGenerator<ListedLock> {
  const { pattern = '*', keyPrefix = 'lock:', count = 500 } = options;
  const match = escapeGlob(keyPrefix) + pattern;
  const nodes = client.isCluster === true && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', count, 'TYPE', 'string');
      cursor = next;
      for (const redisKey of keys) {
        if (redisKey.includes(RESERVED_PREFIX) || !redisKey.startsWith(keyPrefix)) continue;
        // (inspected through the client given: on a Cluster it routes the MULTI to the key's slot)
        const info = await inspectLock(client, lockKeys(redisKey));
        if (info !== null) yield { key: redisKey.slice(keyPrefix.length), redisKey, ...info };
      }
    } while (cursor !== '0');
  }
}

/** `text` as a glob that matches only itself. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
