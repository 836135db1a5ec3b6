/**
 * The one global order in which a multi-key acquisition takes its keys: each distinct key once,
 * sorted by the key as the store sees it (the locker's `keyPrefix` + key) by UTF-16 code unit. Two
 * acquisitions whose sets overlap, in any processes, then take their common keys in the same
 * order, so neither can hold a key the other needs while waiting for one the other holds.
 */

/** A key of a set: as the caller named it, and as the store sees it. */
export interface SetKey {
  readonly key: string;
  readonly storeKey: string;
}

/**
 * `keys` in lock order, each distinct store key once (a key given twice is taken once).
 * `storeKeyOf` validates each key and names it for the store.
 */
export function inLockOrder(keys: readonly string[], storeKeyOf: (key: string) => string): SetKey[] {
  const byStoreKey = new Map<string, string>();
  for (const key of keys) {
    const storeKey = storeKeyOf(key);
    if (!byStoreKey.has(storeKey)) byStoreKey.set(storeKey, key);
  }
  // (< on strings compares UTF-16 code units, which is what every process of any version agrees on)
  return [...byStoreKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([storeKey, key]) => ({ key, storeKey }));
}
