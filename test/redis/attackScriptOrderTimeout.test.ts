/**
 * Attack on the script-order fix (../../src/backends/redis/protocol/commands.ts) with a client
 * that has ioredis' own `commandTimeout`: a command that timed out is still on its socket, and
 * ioredis re-sends it after a reconnect (autoResendUnfulfilledCommands) though its promise was
 * rejected long ago. The registered command goes with its source on the new connection and runs;
 * a plain EVALSHA meets NOSCRIPT on a server restarted empty, and nobody re-sends it (its promise
 * was settled by the timeout).
 *
 * FAILING (a regression of 88cc5f5; passes on 7cdfb88): the connection's first script call is a
 * release, so `release` goes by plain EVALSHA (fast path) and the first `acquire` as the registered
 * command. Server frozen: EVAL acquire(key, T) written, client timeout → the locker fails the
 * acquisition and gives the key back: EVALSHA release(key, T) written behind it, client timeout.
 * Server killed, restarted empty; on the new connection ioredis re-sends both: EVAL acquire → SET
 * key T PX 30000; EVALSHA release → NOSCRIPT (its promise already rejected: never re-sent). The key
 * stays held for its TTL by a token whose acquisition failed. Before the fix the acquire was a
 * plain EVALSHA too, met NOSCRIPT and was dropped.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { sleep } from '../support/timing.js';

const nodes = quorumNodes(1);

let n = 0;
const fresh = (what: string) => `script-order-timeout:${what}:${++n}`;

describe('script order with a client commandTimeout, across an empty restart', () => {
  it('an acquire given up (client commandTimeout) while the server is frozen is not left holding its key after a restart', async () => {
    const [client] = nodes.clients({ commandTimeout: 200, maxRetriesPerRequest: null });
    const store = new RedisLockStore(client!, { wakeUp: false });
    const locker = createLocker({ store, ttl: 30_000, commandTimeout: 5_000 });
    await nodes.connected();
    // The connection's first script call was a release (a lease given back after a reconnect).
    expect(await store.release(fresh('warm'), 'nobody')).toBe(false);

    const key = fresh('frozen');
    nodes.servers[0]!.pause();
    try {
      // the acquire times out in the client: the locker fails it and gives the key back (unsure)
      const outcome = await firstValueFrom(locker.acquire(key)).then(
        () => 'held',
        (error: unknown) => error,
      );
      expect(outcome).toBeInstanceOf(Error);
      await sleep(400); // (the give-back times out in the client too)
      await nodes.kill(0);
    } finally {
      await nodes.restart(0);
    }
    await client!.ping();
    await sleep(100);
    // the acquirer was told it failed; its give-back was sent after it
    expect(await nodes.admins[0]!.get(`lock:${key}`)).toBeNull();
    await locker.close();
  });
});
