/**
 * A master and its replica (`--replicaof`), started for one test, without persistence, and the
 * failover the replica tests stage by hand: the master killed, the replica promoted with
 * `REPLICAOF NO ONE`. Every client opened through the pair, and both servers, are closed by
 * `stop()`.
 *
 * The replica replicates through a proxy (./delayProxy.ts) that can hold the replication stream
 * back: a lagging link. Pausing the replica (SIGSTOP) would not lose a write: what the master sent
 * waits in the replica's socket buffer and is applied once it resumes, even after the master died
 * (seen: the promoted replica then still had the first holder's key). A proxy that holds the
 * stream drops what it held when the master's side closes, as a write the replica never received.
 */
import type { Redis, RedisOptions } from 'ioredis';
import { EPHEMERAL } from './dataLossServers.js';
import { delayProxy } from './delayProxy.js';
import { connect, EmbeddedRedis } from './redis.js';
import { eventually } from './timing.js';

export interface ReplicatedPair {
  readonly master: EmbeddedRedis;
  readonly replica: EmbeddedRedis;
  /** A client of `server`, closed by `stop()`. */
  client(server: EmbeddedRedis, options?: RedisOptions): Redis;
  /**
   * The replication link lags from now on: what the master sends is held back (for 10 minutes),
   * so the replica stays connected but neither receives nor acknowledges the master's new writes.
   */
  holdReplication(): void;
  /** The master dies (SIGKILL), what the link held back is lost, and the replica is promoted (`REPLICAOF NO ONE`). */
  failOver(): Promise<void>;
  /** Closes the clients, then stops both servers. */
  stop(): Promise<void>;
}

/** Starts a master and a replica, and resolves once the replica is in sync. */
export async function replicatedPair(): Promise<ReplicatedPair> {
  const master = await EmbeddedRedis.start({ args: EPHEMERAL });
  const link = await delayProxy(master.port, 0);
  const replica = await EmbeddedRedis.start({ args: [...EPHEMERAL, '--replicaof', '127.0.0.1', String(link.port)] });
  const clients: Redis[] = [];
  const client = (server: EmbeddedRedis, options?: RedisOptions): Redis => {
    const redis = connect(server, options);
    clients.push(redis);
    return redis;
  };
  const masterAdmin = client(master);
  const replicaAdmin = client(replica);
  await eventually(async () => /master_link_status:up/.test(await replicaAdmin.info('replication')), 20_000, 50);
  await eventually(async () => /slave0:.*state=online/.test(await masterAdmin.info('replication')), 20_000, 50);
  return {
    master,
    replica,
    client,
    holdReplication() {
      link.delayMs = 600_000;
    },
    async failOver() {
      await master.kill();
      await replicaAdmin.replicaof('NO', 'ONE');
      await eventually(async () => /role:master/.test(await replicaAdmin.info('replication')), 20_000, 50);
    },
    async stop() {
      for (const redis of clients) redis.disconnect();
      await link.close();
      await Promise.all([replica.stop(), master.stop().catch(() => undefined)]);
    },
  };
}
