/**
 * The engine's side of the script-order fix (../../src/backends/redis/protocol/commands.ts): the
 * single-node store keeps plain EVALSHA on a connection where a script already ran, and relies on
 * the engine never sending a key's next call for a token before the last one was settled
 * (../../src/engine/session/StoreSession.ts). These tests force the orders that would break it.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { eventually } from '../support/timing.js';

const nodes = quorumNodes(1);

let n = 0;
const fresh = (what: string) => `script-order-engine:${what}:${++n}`;

describe('the engine settles a call before the next one of its token', () => {
  it('an acquire given up (commandTimeout) on a frozen server, re-sent after its empty restart, is given back after it ran', async () => {
    // (no client timeout nor retry limit: the calls wait in the client's queues for the restart)
    const [client] = nodes.clients({ maxRetriesPerRequest: null });
    const store = new RedisLockStore(client!, { wakeUp: false });
    const locker = createLocker({ store, ttl: 30_000, commandTimeout: 300 });
    const events: LockEvent[] = [];
    locker.events$.subscribe((event) => events.push(event));
    await nodes.connected();
    // The release script ran on this connection (by SHA from now on), the acquire's has not.
    expect(await store.release(fresh('warm'), 'nobody')).toBe(false);

    const key = fresh('frozen');
    nodes.servers[0]!.pause();
    try {
      const outcome = await firstValueFrom(locker.acquire(key)).then(
        () => 'held',
        (error: unknown) => error,
      );
      expect(outcome).toBeInstanceOf(Error);
      await nodes.kill(0);
    } finally {
      await nodes.restart(0);
    }
    // The acquire (its source, on the new connection) ran and granted; the give-back followed it.
    await eventually(() => events.some((event) => event.type === 'abandoned-released'));
    expect(await nodes.admins[0]!.get(`lock:${key}`)).toBeNull();
    await locker.close();
  });

  it('SCRIPT FLUSH between a grant and its release: the release runs, the next holder gets the key, nothing is left', async () => {
    const [client] = nodes.clients();
    const locker = createLocker({ store: new RedisLockStore(client!, { wakeUp: false }), ttl: 30_000 });
    const key = fresh('flushed');
    const first = await firstValueFrom(locker.acquire(key));
    await nodes.admins[0]!.script('FLUSH');
    // release (by SHA: NOSCRIPT, then its source) and the next acquire (by SHA: NOSCRIPT) back to back
    const [, second] = await Promise.all([first.release(), firstValueFrom(locker.acquire(key))]);
    expect(await nodes.admins[0]!.get(`lock:${key}`)).toBe(second.token);
    await second.release();
    expect(await nodes.admins[0]!.get(`lock:${key}`)).toBeNull();
    await locker.close();
  });
});
