/**
 * What keyNamespace.test.ts (one server) and keyNamespace.cluster.test.ts (a Redis Cluster) share:
 * the user keys that try to reach a lock's helper keys, and a "process" (its own connection,
 * store and locker).
 */
import type { Cluster, Redis } from 'ioredis';
import { createLocker, type Locker, type LockerOptions } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey, type HelperKind } from '../../src/backends/redis/protocol/keyLayout.js';

/** Base keys: with a hash tag in the middle, none, a whole-key tag, a tag between two parts. */
export const BASES = ['job{7}', 'job7', '{job}', 'a{b}c'];
/** The suffixes the old layout used for helper keys (and `:places`, the new kind's name). */
export const SUFFIXES = [':fence', ':line', ':lapses', ':places'];
export const KINDS: HelperKind[] = ['fence', 'line', 'places'];
/** Locker prefixes the layout is computed for. */
export const LOCKER_PREFIXES = ['', 'lock:'];

/**
 * Every key a user could try to reach `base`'s helpers with: old suffixes and exact helper names
 * (under each locker prefix and each of `clientPrefixes`, the ioredis client prefixes).
 */
export function helperKeyVariants(base: string, clientPrefixes: readonly string[] = ['']): string[] {
  const variants = new Set<string>(SUFFIXES.map((suffix) => base + suffix));
  for (const lockerPrefix of LOCKER_PREFIXES) {
    for (const clientPrefix of clientPrefixes) for (const kind of KINDS) variants.add(helperKey(lockerPrefix + base, kind, clientPrefix));
  }
  return [...variants];
}

/** One "process": its own connection, store and locker. */
export interface Process {
  readonly locker: Locker;
  close(): Promise<void>;
}

/** A process on `client` (closed with it), its locker made with `options`. */
export function processOn(client: Redis | Cluster, options: Omit<LockerOptions, 'store'>): Process {
  const store = new RedisLockStore(client);
  const locker = createLocker({ store, ...options });
  return {
    locker,
    close: async () => {
      await locker.close();
      store.close();
      client.disconnect();
    },
  };
}
