/** A private Redis server and clients for one test file. */
import { Redis, type RedisOptions } from 'ioredis';
import { EmbeddedRedis } from '../../support/embeddedRedis.js';

export { EmbeddedRedis };

/** A client that fails fast instead of queueing forever, as fault tests need. */
export function connect(server: EmbeddedRedis, options: RedisOptions = {}): Redis {
  const client = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 2, retryStrategy: () => 50, ...options });
  // Fault tests stop the server on purpose: connection errors are expected, not news.
  client.on('error', () => undefined);
  return client;
}
