/**
 * The servers of the data-loss tests (dataLoss.test.ts, fenceClock.test.ts), started before the
 * file's tests and stopped after them, none with persistence (a restart comes back empty): a lock
 * server, a server for FencedResources, one that evicts under a 2 MB maxmemory, and a primary with
 * its replica. Clients and processes opened by the tests are closed after the last test; no
 * unhandled rejection may happen meanwhile.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import { createLocker, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from './redis.js';
import { unhandledRejections } from './unhandled.js';

/** No persistence: a restart comes back empty. */
export const EPHEMERAL = ['--save', '', '--appendonly', 'no'];
/** Big fence blocks: a grant with local waiters reserves 1 + 1000 fences. */
export const BIG_COHORT = { maxPasses: 1000, maxMs: 60_000 };

/** One "process": its own connection, store and locker, recording the events of its locker. */
export interface Process {
  readonly locker: Locker;
  readonly redis: Redis;
  readonly events: LockEvent[];
}

export interface DataLossServers {
  readonly lockServer: EmbeddedRedis;
  readonly resourceServer: EmbeddedRedis;
  readonly evictServer: EmbeddedRedis;
  readonly primary: EmbeddedRedis;
  readonly replica: EmbeddedRedis;
  /** What to close after the last test (the last pushed first). */
  readonly opened: Array<() => Promise<void> | void>;
  /** A client of `server`, closed after the last test. */
  client(server: EmbeddedRedis): Redis;
  /**
   * A process on `server`, closed after the last test; its locker has `cohort` and `keyPrefix`
   * when given, and its events also go to `log`.
   */
  newProcess(server: EmbeddedRedis, options?: { cohort?: typeof BIG_COHORT; keyPrefix?: string; log?: LockEvent[] }): Process;
}

export function dataLossServers(): DataLossServers {
  const rejections = unhandledRejections();
  const opened: Array<() => Promise<void> | void> = [];
  let lockServer: EmbeddedRedis;
  let resourceServer: EmbeddedRedis;
  let evictServer: EmbeddedRedis;
  let primary: EmbeddedRedis;
  let replica: EmbeddedRedis;

  beforeAll(async () => {
    rejections.start();
    [lockServer, resourceServer, evictServer, primary] = await Promise.all([
      EmbeddedRedis.start({ args: EPHEMERAL }),
      EmbeddedRedis.start({ args: EPHEMERAL }),
      // (Redis 7 keeps a 1 MB replication backlog even without replicas: within 2 MB it would leave
      // the locks too little room, and scripts would fail with OOM instead of evicting.)
      EmbeddedRedis.start({ args: [...EPHEMERAL, '--maxmemory', '2mb', '--maxmemory-policy', 'allkeys-lru', '--repl-backlog-size', '16kb'] }),
      EmbeddedRedis.start({ args: EPHEMERAL }),
    ]);
    replica = await EmbeddedRedis.start({ args: [...EPHEMERAL, '--replicaof', '127.0.0.1', String(primary.port)] });
  });
  afterAll(async () => {
    rejections.stop();
    for (const close of opened.reverse()) await close();
    await Promise.all([lockServer, resourceServer, evictServer, primary, replica].map((server) => server?.stop()));
    expect(rejections.seen).toEqual([]);
  });

  const client = (server: EmbeddedRedis): Redis => {
    const redis = connect(server);
    opened.push(() => redis.disconnect());
    return redis;
  };

  return {
    get lockServer() {
      return lockServer;
    },
    get resourceServer() {
      return resourceServer;
    },
    get evictServer() {
      return evictServer;
    },
    get primary() {
      return primary;
    },
    get replica() {
      return replica;
    },
    opened,
    client,
    newProcess(server, { cohort, keyPrefix, log } = {}) {
      const redis = connect(server);
      const store = new RedisLockStore(redis);
      const locker = createLocker({ store, ...(keyPrefix === undefined ? {} : { keyPrefix }), ...(cohort === undefined ? {} : { cohort }) });
      const events: LockEvent[] = [];
      locker.events$.subscribe((e) => {
        events.push(e);
        log?.push(e);
      });
      opened.push(async () => {
        await locker.close();
        store.close();
        redis.disconnect();
      });
      return { locker, redis, events };
    },
  };
}
