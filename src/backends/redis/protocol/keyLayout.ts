/**
 * Where a lock's keys live in Redis. The lock key itself is the name the locker gives (its
 * `keyPrefix` + the caller's key), holding its owner's token, so `GET` shows who holds it. Beside
 * it the store keeps helper keys: the fence counter, the line of waiters and their places.
 *
 * A reserved namespace: every helper key's name, as Redis sees it (after the client's own ioredis
 * `keyPrefix`, if any), contains {@link RESERVED_PREFIX}, and the store refuses lock keys whose
 * name as Redis sees it contains it anywhere. So no lock key can ever name another lock's helper
 * — not even one of another application that shares the Redis with another ioredis prefix — and
 * two distinct lock keys are always two independent locks (a helper key embeds its lock key after
 * the `{…}` tag, so distinct locks never share one).
 *
 * One hash slot: a Lua script may only touch keys of one Redis Cluster slot, so every helper key
 * must hash like its lock key. Redis hashes the part of a key between the first `{` and the first
 * `}` after it when that part is not empty (the hash tag), and the whole key otherwise. So:
 * - a lock key with a hash tag `T`: helpers are `rxjs-lock:<kind>:{T}:<lock key>`;
 * - a lock key without one is hashed whole: helpers are `rxjs-lock:<kind>:{<lock key>}`, which
 *   hashes exactly like it as long as the lock key holds no `}` (it would end the tag early).
 *   Such keys are refused.
 * With an ioredis `keyPrefix`, the client prefixes every key it sends, so the layout is computed
 * for the prefixed lock key.
 */
import { LockOptionsError } from '../../../errors/errors.js';

/** The namespace of the store's own keys; a lock key's name (as Redis sees it) may not contain it. */
export const RESERVED_PREFIX = 'rxjs-lock:';

/** What each helper key is for (the `shared-*` ones: semaphores and read-write locks, see lua/lib/shared.lua). */
export type HelperKind = 'fence' | 'line' | 'places' | 'refused' | 'hint' | SharedKind;

/** The helper keys of a shared lock (semaphore, read-write lock). */
export type SharedKind = 'shared-holders' | 'shared-permits' | 'shared-line' | 'shared-places' | 'shared-fence';

/** A lock's keys, in the order its scripts take them: lock, fence counter, line, places. */
export type LockKeys = readonly [lock: string, fence: string, line: string, places: string];

/** The keys of `lockKey` (as the store receives it), for a client that prefixes keys with `clientPrefix`. */
export function lockKeys(lockKey: string, clientPrefix = ''): LockKeys {
  return [lockKey, helperKey(lockKey, 'fence', clientPrefix), helperKey(lockKey, 'line', clientPrefix), helperKey(lockKey, 'places', clientPrefix)];
}

/**
 * The keys of recently used lock keys, for one client prefix: a lock key's layout is built once
 * (three helper names, each a hash tag search and a string) and then found by one map look-up on
 * every call. Bounded: past `capacity` lock keys the oldest entry goes, so a process touching
 * ever new keys keeps at most `capacity` layouts.
 */
export class LockKeysCache {
  private readonly entries = new Map<string, LockKeys>();

  constructor(
    private readonly clientPrefix = '',
    private readonly capacity = 1024,
  ) {}

  /** {@link lockKeys} of `lockKey` for this cache's client prefix. */
  of(lockKey: string): LockKeys {
    let keys = this.entries.get(lockKey);
    if (keys === undefined) {
      keys = lockKeys(lockKey, this.clientPrefix);
      if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(lockKey, keys);
    }
    return keys;
  }

  /** Lock keys whose layout is kept now. */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * A shared lock's keys, in the order its scripts take them: holders, permits, line, places, fence
 * counter. All are helper keys: the shared lock named `lockKey` is apart from the mutex of that
 * name (whose key is `lockKey` itself), and both live in its hash slot.
 */
export type SharedKeys = readonly [holders: string, permits: string, line: string, places: string, fence: string];

/** The keys of the shared lock `lockKey`, for a client that prefixes keys with `clientPrefix`. */
export function sharedKeys(lockKey: string, clientPrefix = ''): SharedKeys {
  const key = (kind: SharedKind) => helperKey(lockKey, kind, clientPrefix);
  return [key('shared-holders'), key('shared-permits'), key('shared-line'), key('shared-places'), key('shared-fence')];
}

/**
 * The shared lock whose helper key of `kind` is named `helper` (as the store's client names it,
 * without `clientPrefix`), or `undefined` when no lock key's helper has that name: the inverse of
 * {@link helperKey}, checked by computing the name back.
 */
export function lockKeyOfHelper(helper: string, kind: HelperKind, clientPrefix = ''): string | undefined {
  const head = `${RESERVED_PREFIX}${kind}:{`;
  if (!helper.startsWith(head)) return undefined;
  const rest = helper.slice(head.length);
  // untagged: '{<clientPrefix + lock key>}'; tagged: '{<tag>}:<lock key>' (a tag holds no '}')
  const candidates = [
    rest.endsWith('}') && rest.slice(0, -1).startsWith(clientPrefix) ? rest.slice(clientPrefix.length, -1) : undefined,
    rest.includes('}:') ? rest.slice(rest.indexOf('}:') + 2) : undefined,
  ];
  return candidates.find((lockKey) => lockKey !== undefined && helperKey(lockKey, kind, clientPrefix) === helper);
}

/** The helper key `kind` of `lockKey`, in the same hash slot. */
export function helperKey(lockKey: string, kind: HelperKind, clientPrefix = ''): string {
  const full = clientPrefix + lockKey;
  const tag = hashTag(full);
  return tag === undefined ? `${RESERVED_PREFIX}${kind}:{${full}}` : `${RESERVED_PREFIX}${kind}:{${tag}}:${lockKey}`;
}

/**
 * Throws `LockOptionsError` for a lock key the store cannot keep: one in the reserved namespace,
 * or one whose helper keys could not share its hash slot.
 */
export function checkLockKey(lockKey: string, clientPrefix = ''): void {
  if (isReserved(lockKey, clientPrefix)) throw reservedKeyError(lockKey);
  const full = clientPrefix + lockKey;
  if (hashTag(full) === undefined && full.includes('}')) {
    throw new LockOptionsError('key', 'a key (with its prefix) that either has a non-empty {…} Redis hash tag or holds no "}"', lockKey);
  }
}

/** The hash tag Redis hashes `key` by, or `undefined` when it hashes the whole key. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** Does the lock key's name, as Redis sees it, reach into the store's own namespace? */
export function isReserved(lockKey: string, clientPrefix = ''): boolean {
  return (clientPrefix === '' ? lockKey : clientPrefix + lockKey).includes(RESERVED_PREFIX);
}

/** The error for a lock key in the store's own namespace. */
export function reservedKeyError(lockKey: string): LockOptionsError {
  return new LockOptionsError('key', `a key (with its prefixes) that does not contain "${RESERVED_PREFIX}", the store's own namespace`, lockKey);
}

/** The marker of a shard wake-up channel in its name (the release script SPUBLISHes to those). */
export const SHARD_CHANNEL_MARK = `${RESERVED_PREFIX}wake:`;

/**
 * The shard channel (Redis ≥ 7 sharded pub/sub) on which releases of `lockKey` wake the waiters of
 * store `storeId`, as a client with key prefix `clientPrefix` subscribes to it (ioredis prefixes
 * the channel of SSUBSCRIBE like a key) and as the release script publishes to it
 * (`clientPrefix` + that). It shares the lock key's hash slot, as a script on a Cluster requires,
 * and carries the store's id, so a hand-off wakes the grantee's store alone.
 */
export function shardChannel(lockKey: string, storeId: string, clientPrefix = ''): { readonly subscribed: string; readonly published: string } {
  const full = clientPrefix + lockKey;
  const tag = hashTag(full);
  const subscribed = tag === undefined ? `${SHARD_CHANNEL_MARK}{${full}}:${storeId}` : `${SHARD_CHANNEL_MARK}{${tag}}:${storeId}:${lockKey}`;
  return { subscribed, published: clientPrefix + subscribed };
}
