/**
 * Lock-delay on a real Redis: the lock-delay contract; a holder process frozen with SIGSTOP (it
 * cannot renew, release or even notice) whose key the next acquirer gets no earlier than
 * `ttl + lockDelay` after the holder's last TTL-setting call was sent; and hand-offs through the
 * store's line with a lock-delay longer than the place TTL (a hand-off grant is shorter than the
 * delay: still taken, not turned away; the waiters poll, so each finds its grant by its own attempt,
 * whose answer says the TTL the key has left).
 */
import { fileURLToPath } from 'node:url';
import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { monotonicNs } from '../../src/testing.js';
import { lockDelayContract } from '../contract/lockDelayContract.js';
import type { DelayedHolderSettings } from '../fixtures/delayedHolder.js';
import { forkFixture, killIfRunning, messagesOf, within } from '../support/children.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

lockDelayContract('RedisLockStore', async () => {
  const server = await EmbeddedRedis.start();
  const client = connect(server);
  const store = new RedisLockStore(client);
  return {
    store,
    holderOf: (storeKey) => client.get(storeKey),
    pttlOf: (storeKey) => client.pttl(storeKey),
    close: async () => {
      store.close();
      client.disconnect();
      await server.stop();
    },
  };
});

describe('lock-delay across processes', () => {
  const suite = redisSuite();
  const fixture = fileURLToPath(new URL('../fixtures/delayedHolder.ts', import.meta.url));

  it('a holder frozen by SIGSTOP: the next acquirer gets the key no earlier than ttl + lockDelay after the holder last set its TTL', async () => {
    const settings: DelayedHolderSettings = { port: suite.server.port, key: 'frozen', ttl: 300, lockDelay: 700, interval: 100 };
    const child = forkFixture(fixture, 'DELAYED_HOLDER', settings);
    const sent: bigint[] = [];
    child.on('message', (m: { type: string; at?: string }) => m.type === 'sending' && sent.push(BigInt(m.at!)));
    const client = connect(suite.server);
    const store = new RedisLockStore(client);
    const locker = createLocker({ store, waitTimeout: 10_000 });
    try {
      await within(messagesOf(child)('held'), 20_000, 'held');
      await new Promise((resolve) => setTimeout(resolve, 250)); // a renewal or two
      child.kill('SIGSTOP');
      const stoppedAt = monotonicNs();
      const lease = await firstValueFrom(locker.acquire('frozen'));
      const takenAt = monotonicNs();
      // (IPC sent before the stop has arrived by now: the last announced call is the last sent)
      const last = sent.filter((at) => at < stoppedAt).reduce((a, b) => (a > b ? a : b));
      const afterLast = Number(takenAt - last) / 1e6;
      // (2 ms for Redis's millisecond clock against the monotonic one)
      expect(afterLast).toBeGreaterThanOrEqual(settings.ttl + settings.lockDelay - 2);
      expect(sent.length).toBeGreaterThan(1);
      await lease.release();
    } finally {
      killIfRunning(child);
      await locker.close();
      store.close();
      client.disconnect();
    }
  });

  it('a lock-delay longer than the place TTL: hand-offs through the line are still taken (two lockers, 2 × 3 loops × 8 turns on one key)', async () => {
    const clients = [connect(suite.server), connect(suite.server)];
    const stores = clients.map((client) => new RedisLockStore(client, { placeTtl: 300, wakeUp: false }));
    const lockers = stores.map((store) => createLocker({ store, lockDelay: 1_000, ttl: 2_000, waitTimeout: 10_000, cohort: false }));
    try {
      let inside = 0;
      let most = 0;
      const loop = async (index: number) => {
        for (let i = 0; i < 8; i++) {
          await lastValueFrom(
            lockers[index]!.using('hot', async () => {
              most = Math.max(most, ++inside);
              await firstValueFrom(timer(2));
              inside--;
            }),
          );
        }
      };
      await Promise.all([0, 1, 0, 1, 0, 1].map(loop));
      expect(most).toBe(1);
      expect(await suite.admin.exists('lock:hot')).toBe(0);
    } finally {
      await Promise.all(lockers.map((locker) => locker.close()));
      stores.forEach((store) => store.close());
      clients.forEach((client) => client.disconnect());
    }
  });
});
