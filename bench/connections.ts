/** Redis connections of the bench's worker processes (./worker.ts, ./probes.ts). */
import { Cluster, Redis } from 'ioredis';
import type { RedisConnection } from './adapters/types.js';

const CONNECT_TIMEOUT_MS = 10_000;
const QUIT_TIMEOUT_MS = 5_000;

/** A connected ioredis client named `connectionName` (round trips are counted by that name). */
export async function connectReady(address: { readonly host: string; readonly port: number }, connectionName: string): Promise<Redis> {
  const redis = new Redis({ host: address.host, port: address.port, connectionName });
  redis.on('error', () => undefined); // failures surface as rejected commands
  await whenReady(redis, 'Redis');
  return redis;
}

/** Resolves once `client` is ready, or rejects after {@link CONNECT_TIMEOUT_MS}. */
function whenReady(client: RedisConnection, what: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no connection to ${what} after ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * A ready ioredis Cluster client on the masters `startupNodes`, with ioredis' defaults. Its node
 * connections are named `connectionName`; its subscriber connections `ioredis-cluster(…):` and
 * that name (ioredis' naming), which the round-trip counter recognises as the same tag.
 */
export async function connectClusterReady(
  startupNodes: ReadonlyArray<{ readonly host: string; readonly port: number }>,
  connectionName: string,
): Promise<Cluster> {
  const cluster = new Cluster(
    startupNodes.map(({ host, port }) => ({ host, port })),
    { redisOptions: { connectionName } },
  );
  cluster.on('error', () => undefined); // failures surface as rejected commands
  try {
    await whenReady(cluster, 'the Redis Cluster');
  } catch (error) {
    cluster.disconnect();
    throw error;
  }
  return cluster;
}

/** QUIT is answered after every command already sent, so the last releases reach Redis first. */
export async function closeAll(connections: readonly RedisConnection[]): Promise<void> {
  await Promise.all(
    connections.map(async (redis) => {
      try {
        await Promise.race([redis.quit(), new Promise<void>((resolve) => setTimeout(resolve, QUIT_TIMEOUT_MS))]);
      } catch {
        // already closed
      }
      redis.disconnect();
    }),
  );
}
