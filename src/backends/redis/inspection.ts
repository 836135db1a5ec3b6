/**
 * Reading a lock's state in Redis without changing it (the store's `inspect`): one transaction of
 * plain read commands on the lock's keys (all in one hash slot, so it runs on a Cluster too) —
 * `GET` the holder's token, `PTTL` the key, `HGETALL` the places beside it (the waiters' places
 * and the record of the last hand-off, see protocol/lua/lib/line.lua) and the server's `TIME`, to
 * count only the places that have not lapsed. No script: nothing to load, and nothing a read-only
 * replica or a flushed script cache could refuse.
 */
import type { LockInfo } from '../../store/capabilities.js';
import type { LockKeys } from './protocol/keyLayout.js';
import { hashRecord } from './protocol/codec.js';
import type { RedisClient, RedisReplies } from './RedisClient.js';

/** The read commands of the inspection's MULTI (ioredis names). */
interface InspectionTransaction {
  get(key: string): InspectionTransaction;
  pttl(key: string): InspectionTransaction;
  hgetall(key: string): InspectionTransaction;
  time(): InspectionTransaction;
  exec(): Promise<RedisReplies>;
}

/** The state of the lock whose keys are `keys`, or `null` when its key is free. */
export async function inspectLock(client: RedisClient, keys: LockKeys): Promise<LockInfo | null> {
  const [lock, , , places] = keys;
  const multi = client.multi() as unknown as InspectionTransaction;
  return decodeInspection(await multi.get(lock).pttl(lock).hgetall(places).time().exec());
}

/** The transaction's answers as a {@link LockInfo}. */
export function decodeInspection(replies: RedisReplies): LockInfo | null {
  if (replies === null) throw new Error('rxjs-lock: the inspection transaction was discarded');
  for (const [error] of replies) if (error !== null) throw error;
  const [token, pttl, placeMap, time] = replies.map(([, reply]) => reply) as [
    string | null,
    number,
    Record<string, string> | string[] | null,
    [string, string],
  ];
  if (token === null || pttl === -2) return null;
  const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const fields = hashRecord(placeMap);
  let waiting = 0;
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith('w:')) continue;
    const lapseAt = Number(value.slice(0, value.indexOf(' ')));
    if (lapseAt > now) waiting++;
  }
  const info: { token: string; ttl: number; waiting: number; fence?: number } = { token, ttl: Math.max(0, pttl), waiting };
  // The last hand-off's record ('<token> <fence> <fences>'): the holder's fence if it was to them.
  const grant = /^(.*) (\d+) (\d+)$/.exec(fields.grant ?? '');
  if (grant !== null && grant[1] === token) info.fence = Number(grant[2]);
  return info;
}
