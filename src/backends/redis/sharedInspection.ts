/**
 * Reading a shared lock (semaphore, read-write lock) in Redis without changing it (the store's
 * `inspectShared`): one transaction of plain read commands on its keys (all in the lock key's hash
 * slot, so it runs on a Cluster too) — the holders with their lease ends (`ZRANGE … WITHSCORES`),
 * their weights and fences (`HGETALL` of the permits hash), the waiters' places (`HGETALL`) and the
 * server's `TIME`, to count only the holders whose lease has not ended and the places that have not
 * lapsed, as the scripts would (see protocol/lua/lib/shared.lua). No script, nothing swept or
 * granted: a waiter that would fit is still a waiter until a script grants it.
 */
import type { SharedHolderInfo, SharedLockInfo } from '../../store/SharedLockStore.js';
import type { SharedKeys } from './protocol/keyLayout.js';
import { hashRecord } from './protocol/codec.js';
import type { RedisClient, RedisReplies } from './RedisClient.js';

/** The read commands of the inspection's MULTI (ioredis names). */
interface SharedInspectionTransaction {
  zrange(key: string, start: number, stop: number, withScores: 'WITHSCORES'): SharedInspectionTransaction;
  hgetall(key: string): SharedInspectionTransaction;
  time(): SharedInspectionTransaction;
  exec(): Promise<RedisReplies>;
}

/** The state of the shared lock whose keys are `keys`, or `null` when it has no live holder or waiter. */
export async function inspectSharedLock(client: RedisClient, keys: SharedKeys): Promise<SharedLockInfo | null> {
  const [holders, permits, , places] = keys;
  const multi = client.multi() as unknown as SharedInspectionTransaction;
  return decodeSharedInspection(await multi.zrange(holders, 0, -1, 'WITHSCORES').hgetall(permits).hgetall(places).time().exec());
}

/** The transaction's answers as a {@link SharedLockInfo}. */
export function decodeSharedInspection(replies: RedisReplies): SharedLockInfo | null {
  if (replies === null) throw new Error('rxjs-lock: the inspection transaction was discarded');
  for (const [error] of replies) if (error !== null) throw error;
  const [ends, permitMap, placeMap, time] = replies.map(([, reply]) => reply) as [
    string[],
    Record<string, string> | string[] | null,
    Record<string, string> | string[] | null,
    [string, string],
  ];
  const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const weights = hashRecord(permitMap);
  const holders: SharedHolderInfo[] = [];
  // (sorted by lease end, first to end first; a lease that ended before `now` is swept by the next script)
  for (let i = 0; i + 1 < ends.length; i += 2) {
    const token = ends[i]!;
    const endsAt = Number(ends[i + 1]);
    // ('<weight> <fence>', or '<weight> <fences reserved> <fence>')
    const held = /^(\d+) (?:\d+ )?(\d+)$/.exec(weights[`h:${token}`] ?? '');
    if (endsAt < now || held === null) continue;
    holders.push({ token, weight: Number(held[1]), fence: Number(held[2]), ttl: Math.max(0, endsAt - now) });
  }
  let waiting = 0;
  for (const place of Object.values(hashRecord(placeMap))) {
    const lapseAt = Number(place.slice(0, place.indexOf(' ')));
    if (lapseAt > now) waiting++;
  }
  if (holders.length === 0 && waiting === 0) return null;
  return { used: holders.reduce((sum, h) => sum + h.weight, 0), holders, waiting };
}
