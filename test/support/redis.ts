/** A private Redis server and clients for one test file. */
import { Redis, type RedisOptions } from 'ioredis';
import { EmbeddedRedis } from '../../support/embeddedRedis.js';

export { EmbeddedRedis };

/** A client that fails fast instead of queueing forever, as fault tests need. */
export function connect(server: EmbeddedRedis, options: RedisOptions = {}): Redis {
  return new Redis({ host: server.host, port: server.port, lazyConnect: false, maxRetriesPerRequest: 2, retryStrategy: () => 50, ...options });
}

/** Number of keys on the server (excluding none: test servers are private). */
export async function dbsize(client: Redis): Promise<number> {
  return client.dbsize();
}
