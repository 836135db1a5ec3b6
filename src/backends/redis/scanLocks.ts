/**
 * Listing the locks held in a Redis, for operators (`npx rxjs-lock inspect`): SCAN (never KEYS,
 * which blocks the server) for string keys under the locker's `keyPrefix` that match a pattern,
 * skipping the store's own helper keys (the reserved `rxjs-lock:` namespace), and inspect each
 * (see ./inspection.ts): holder token, remaining TTL, fence when Redis keeps it, live waiters.
 * On a Cluster every master is scanned.
 */
import type { LockInfo } from '../../store/capabilities.js';
import { inspectLock } from './inspection.js';
import { lockKeys, RESERVED_PREFIX, type LockKeys } from './protocol/keyLayout.js';
import type { RedisClient } from './RedisClient.js';

/**
 * The parts of an ioredis `Redis` or `Cluster` that listing uses.
 *
 * @example
 * ```ts
 * import { Cluster } from 'ioredis';
 *
 * // an ioredis Redis or Cluster is one as it is: on a Cluster every master is scanned
 * const client: ScanningClient = new Cluster([{ host: 'redis-0.internal', port: 6379 }]);
 * for await (const lock of scanLocks(client)) console.log(lock.key, lock.ttl);
 * ```
 */
export interface ScanningClient extends RedisClient {
  scan(cursor: string, ...args: Array<string | number>): Promise<[cursor: string, keys: string[]]>;
  /** A Cluster's nodes (ioredis `Cluster.nodes('master')`). */
  nodes?(role: 'master'): ScanningClient[];
}

/**
 * Options of {@link scanLocks}.
 *
 * @example
 * ```ts
 * const options: ScanLocksOptions = { pattern: 'invoice:*', keyPrefix: 'billing:lock:', count: 1_000 };
 * for await (const lock of scanLocks(new Redis(), options)) console.log(lock.key, lock.token, lock.ttl);
 * ```
 */
export interface ScanLocksOptions {
  /**
   * A Redis glob (`*`, `?`, `[…]`) on the key as the locker names it, after `keyPrefix`.
   * @default '*'
   */
  pattern?: string;
  /**
   * The locker's `keyPrefix`: only keys under it (after `clientPrefix`) are listed, and it is cut
   * from the names listed.
   * @default 'lock:'
   */
  keyPrefix?: string;
  /**
   * The ioredis `keyPrefix` of the application's clients (the stores'), if they have one. It is in
   * front of every key of theirs — the lock keys and, before the reserved namespace, the helper
   * keys (the line, the fence) — so it must be given here, not folded into `keyPrefix`: the helper
   * keys are named after the key *as the store's client sees it*. The client passed to
   * `scanLocks` must have no `keyPrefix` of its own.
   * @default ''
   * @example
   * ```ts
   * // the application's stores use new Redis({ keyPrefix: 'app:' }) and lockers with keyPrefix 'lock:'
   * for await (const lock of scanLocks(new Redis(), { clientPrefix: 'app:' })) console.log(lock.key, lock.waiting);
   * ```
   */
  clientPrefix?: string;
  /**
   * The SCAN `COUNT` hint: keys looked at per round trip.
   * @default 500
   */
  count?: number;
}

/**
 * A held lock found by {@link scanLocks}.
 *
 * @example
 * ```ts
 * for await (const lock of scanLocks(new Redis())) {
 *   const listed: ListedLock = lock;
 *   if (listed.waiting > 10) console.warn(`${listed.key} (${listed.redisKey}): ${listed.waiting} waiting, held by ${listed.token}`);
 * }
 * ```
 */
export interface ListedLock extends LockInfo {
  /** The key as the locker names it (without `clientPrefix` and `keyPrefix`). */
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
  const { pattern = '*', keyPrefix = 'lock:', clientPrefix = '', count = 500 } = options;
  const under = clientPrefix + keyPrefix;
  const match = escapeGlob(under) + pattern;
  const nodes = client.isCluster === true && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', count, 'TYPE', 'string');
      cursor = next;
      for (const redisKey of keys) {
        if (redisKey.includes(RESERVED_PREFIX) || !redisKey.startsWith(under)) continue;
        // The lock's keys as the store's client names them, with that client's prefix in front.
        // (Inspected through the client given: on a Cluster it routes the MULTI to the key's slot.)
        const [lock, fence, line, places] = lockKeys(redisKey.slice(clientPrefix.length), clientPrefix);
        const keys: LockKeys = [clientPrefix + lock, clientPrefix + fence, clientPrefix + line, clientPrefix + places];
        const info = await inspectLock(client, keys);
        if (info !== null) yield { key: redisKey.slice(under.length), redisKey, ...info };
      }
    } while (cursor !== '0');
  }
}

/** `text` as a glob that matches only itself. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
