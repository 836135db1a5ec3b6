/** Redis connections of the bench's worker processes (./worker.ts, ./probes.ts). */
import { Redis } from 'ioredis';

const CONNECT_TIMEOUT_MS = 10_000;
const QUIT_TIMEOUT_MS = 5_000;

/** A connected ioredis client named `connectionName` (round trips are counted by that name). */
export async function connectReady(address: { readonly host: string; readonly port: number }, connectionName: string): Promise<Redis> {
  const redis = new Redis({ host: address.host, port: address.port, connectionName });
  redis.on('error', () => undefined); // failures surface as rejected commands
  if (redis.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no connection to Redis after ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
      redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  return redis;
}

/** QUIT is answered after every command already sent, so the last releases reach Redis first. */
export async function closeAll(connections: readonly Redis[]): Promise<void> {
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
