/**
 * Where a lock's helper keys live (its fence counter, and any other key a script touches with
 * it). A Lua script may only touch keys of one Redis Cluster hash slot, so every helper key must
 * hash like the lock key itself.
 *
 * Redis hashes the part of a key between the first `{` and the first `}` after it when that part
 * is not empty (the hash tag), and the whole key otherwise. So:
 * - a lock key with a hash tag gets its helpers by appending a suffix, which keeps the tag;
 * - a lock key without one is hashed whole, and `{<lock key>}<suffix>` hashes exactly like it,
 *   as long as the lock key holds no `}` (which would end the tag early). Such keys are refused.
 */
import { LockOptionsError } from '../../errors.js';

/** The helper key `suffix` of `lockKey`, in the same hash slot. */
export function helperKey(lockKey: string, suffix: string): string {
  return hasHashTag(lockKey) ? lockKey + suffix : `{${lockKey}}${suffix}`;
}

/** Throws `LockOptionsError` for a key whose helper keys could not share its hash slot. */
export function checkKeyLayout(lockKey: string): void {
  if (!hasHashTag(lockKey) && lockKey.includes('}')) {
    throw new LockOptionsError(
      'key',
      'a key (with its prefix) that either has a non-empty {…} Redis hash tag or holds no "}"',
      lockKey,
    );
  }
}

/** Does Redis hash `key` by a tag rather than whole? */
export function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open < 0) return false;
  const close = key.indexOf('}', open + 1);
  return close > open + 1;
}
