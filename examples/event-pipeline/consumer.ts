/**
 * One consumer of the event pipeline: a member of a Redis Stream consumer group that applies each
 * message (`{ account, amount }`) to the account's balance as a read-modify-write on Redis keys,
 * under the account's lock, with `exclusivePerKey`.
 *
 * - Reading: XAUTOCLAIM first (messages left pending by a consumer that died, idle for
 *   `claimIdleMs`), then XREADGROUP for new ones.
 * - Exactly once in effect: in the critical section, a message whose idempotency record
 *   (`applied:<id>`) exists was applied already (by a consumer that died before XACK): it is only
 *   acknowledged. Otherwise the new balance, the record and the log entry are written in one
 *   MULTI/EXEC. The lock makes the read-modify-write of one account exclusive across processes.
 * - Failures: a message whose Redis commands fail is not acknowledged: it stays pending and is
 *   claimed again once idle; the pipeline goes on. The lock's own errors (LockLostError: the lease
 *   stopped protecting us; LockStoreError) end this consumer's pipeline, as errors end mergeMap:
 *   it stops, exits with code 1, and the others claim its pending messages. It waits for a busy
 *   account without limit (`waitTimeout: Infinity`): a dead holder's lock ends with its ttl (3 s).
 * - Shutdown: on 'stop' (or SIGTERM) it stops reading, lets queued messages finish, then closes
 *   the locker, the store and both Redis clients (quit), and the process exits by itself.
 */
import { Redis } from 'ioredis';
import { catchError, EMPTY, finalize, from, lastValueFrom, Observable, tap } from 'rxjs';
import { createLocker, exclusivePerKey, isLockLostError, isLockStoreError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { CONSUMER_ENV, keys, type ConsumerMessage, type ConsumerSettings, type ParentMessage } from './protocol.js';

const settings = JSON.parse(process.env[CONSUMER_ENV] ?? '{}') as ConsumerSettings;
const tell = (message: ConsumerMessage) => process.send?.(message);

const connect = (name: string) => {
  const client = new Redis({ host: settings.host, port: settings.port, connectionName: `${settings.consumer}-${name}` });
  client.on('error', (error) => console.error(`[${settings.consumer}] redis (${name}):`, error.message));
  return client;
};
/** Locks and the balances: short commands only. */
const redis = connect('main');
/** XREADGROUP … BLOCK holds its connection: a client of its own. */
const reader = connect('reader');
const store = new RedisLockStore(redis);
// ttl 3 s (renewed every second while a message is processed): an account whose holder was killed
// is free again within 3 s.
const locker = settings.inMemoryLocks === true ? createLocker({ ttl: 3_000 }) : createLocker({ store, ttl: 3_000 });

interface Entry {
  readonly id: string;
  readonly account: string;
  readonly amount: number;
}

let stopping = false;
/** Reading begins once the parent says so (every consumer is ready by then). */
let begin: () => void = () => undefined;
const started = new Promise<void>((resolve) => (begin = resolve));
/** Ids this process has read and not finished: not claimed again from ourselves. */
const inFlight = new Set<string>();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function entryOf([id, fields]: [string, string[]]): Entry {
  const data: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) data[fields[i]!] = fields[i + 1]!;
  return { id, account: data.account!, amount: Number(data.amount) };
}

/** The group's messages for this consumer: claimed ones first, then new ones, until stopped. */
const entries$ = new Observable<Entry>((subscriber) => {
  let cursor = '0-0';
  const loop = async () => {
    await started;
    while (!stopping && !subscriber.closed) {
      // Don't read far ahead of the processing: what is read is pending on us.
      if (inFlight.size >= settings.concurrency * 2) {
        await sleep(5);
        continue;
      }
      const [next, claimed] = (await redis.xautoclaim(settings.stream, settings.group, settings.consumer, settings.claimIdleMs, cursor, 'COUNT', 20)) as [
        string,
        Array<[string, string[]] | null>,
      ];
      cursor = next;
      const taken = claimed.filter((e): e is [string, string[]] => e !== null && !inFlight.has(e[0]));
      if (taken.length > 0) tell({ type: 'claimed', count: taken.length });
      const read = (await reader.xreadgroup('GROUP', settings.group, settings.consumer, 'COUNT', 10, 'BLOCK', 100, 'STREAMS', settings.stream, '>')) as Array<
        [string, Array<[string, string[]]>]
      > | null;
      for (const raw of [...taken, ...(read?.[0]?.[1] ?? [])]) {
        inFlight.add(raw[0]);
        subscriber.next(entryOf(raw));
      }
    }
    subscriber.complete();
  };
  loop().catch((error: unknown) => subscriber.error(error));
  return () => {
    stopping = true;
  };
});

/** Applies one message, under its account's lock. */
async function apply(entry: Entry, signal: AbortSignal): Promise<ConsumerMessage> {
  if (await redis.exists(keys.applied(entry.id))) {
    await redis.xack(settings.stream, settings.group, entry.id);
    return { type: 'duplicate', id: entry.id };
  }
  const before = Number((await redis.get(keys.balance(entry.account))) ?? '0');
  await sleep(settings.workMs); // the "business logic": a lost update happens here without the lock
  // The lease was lost meanwhile (or we are being stopped): write nothing, the message stays pending.
  signal.throwIfAborted();
  await redis
    .multi()
    .set(keys.balance(entry.account), String(before + entry.amount))
    .set(keys.applied(entry.id), '1')
    .rpush(keys.log, entry.id)
    .exec();
  await redis.xack(settings.stream, settings.group, entry.id);
  return { type: 'applied', id: entry.id };
}

const done = lastValueFrom(
  entries$.pipe(
    exclusivePerKey(
      (entry) => `account:${entry.account}`,
      (entry, _lease, signal) =>
        from(apply(entry, signal)).pipe(
          tap((result) => tell(result)),
          // A failed Redis command must not end the pipeline: report it, leave the message pending.
          catchError((error: unknown) => {
            tell({ type: 'failed', id: entry.id, error: String(error) });
            return EMPTY;
          }),
          finalize(() => inFlight.delete(entry.id)),
        ),
      // waitTimeout: Infinity — an account whose holder died is free again within its ttl (3 s).
      { locker, concurrency: settings.concurrency, waitTimeout: Infinity },
    ),
  ),
  { defaultValue: undefined },
).catch((error: unknown) => {
  // The lock's own errors end the pipeline (as in mergeMap). LockLostError: another consumer may
  // now hold the account, so this one must not go on writing; it stops, and its pending messages
  // are claimed by the others. LockStoreError: Redis failed.
  const kind = isLockLostError(error) ? 'lease lost' : isLockStoreError(error) ? 'store failed' : 'error';
  console.error(`[${settings.consumer}] pipeline stopped (${kind}):`, error);
  process.exitCode = 1;
});

locker.events$.subscribe((event) => {
  if (event.type === 'lost') console.error(`[${settings.consumer}] lost the lock of ${event.key}: ${event.reason}`);
});

async function shutDown(): Promise<void> {
  stopping = true;
  await done;
  await locker.close();
  store.close();
  await Promise.all([redis.quit(), reader.quit()]);
  tell({ type: 'stopped' });
  process.disconnect?.();
}

process.on('message', (message: ParentMessage) => {
  if (message.type === 'start') begin();
  else if (message.type === 'stop') {
    begin();
    void shutDown();
  }
});
process.once('SIGTERM', () => {
  begin();
  void shutDown();
});

Promise.all([redis.ping(), reader.ping()]).then(
  () => tell({ type: 'ready' }),
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
