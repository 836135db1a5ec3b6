/**
 * Attacks on inspection with the Redis store: `inspect`, `isLocked` and `waitUntilFree` must write
 * nothing (every command the inspecting connection sends, seen by MONITOR, is a read by the
 * server's own COMMAND INFO flags), never stand in the store's line, and `waitUntilFree` must end
 * with LockTimeoutError at its wait limit while the key stays held.
 */
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

describe('attack: inspection writes nothing and never waits in line', () => {
  it('inspect, isLocked and waitUntilFree on a held key with a waiter in line send only read commands', async () => {
    const holderClient = connect(suite.server);
    const inspectorClient = connect(suite.server);
    const monitorClient = connect(suite.server);
    suite.closers.push(
      () => holderClient.disconnect(),
      () => inspectorClient.disconnect(),
      () => monitorClient.disconnect(),
    );
    const holder = createLocker({ store: new RedisLockStore(holderClient), ttl: 30_000, renew: false });
    const inspector = createLocker({ store: new RedisLockStore(inspectorClient), ttl: 30_000 });
    suite.closers.push(
      () => holder.close(),
      () => inspector.close(),
    );

    const key = 'weird\n{tag}\u0000key';
    await firstValueFrom(holder.acquire(key));
    // a waiter of another process in the store's line
    const waiterClient = connect(suite.server);
    suite.closers.push(() => waiterClient.disconnect());
    const waiterStore = new RedisLockStore(waiterClient);
    expect(await waiterStore.tryAcquireInLine(`lock:${key}`, 'w', 30_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });
    const line = helperKey(`lock:${key}`, 'line');
    const lineBefore = await suite.admin.zrange(line, '0', '-1');

    await inspectorClient.ping();
    const inspectorId = String(await inspectorClient.client('ID'));
    const clientList = String(await suite.admin.client('LIST', 'ID', inspectorId));
    const address = /addr=(\S+)/.exec(clientList)![1]!;
    const monitor = await monitorClient.monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source.endsWith(address)) seen.push(String(args[0]).toLowerCase());
    });
    try {
      const info = await lastValueFrom(inspector.inspect(key));
      expect(info).toMatchObject({ waiting: 1, heldHere: false });
      expect(await lastValueFrom(inspector.isLocked(key))).toBe(true);
      const started = performance.now();
      const waited = await lastValueFrom(inspector.waitUntilFree(key, { waitTimeout: 400, retry: { minDelay: 20, jitter: 10 } })).catch((e: unknown) => e);
      expect(isLockTimeoutError(waited)).toBe(true);
      expect(performance.now() - started).toBeGreaterThanOrEqual(390);
      // an unsubscribe in the middle of a wait leaves nothing running
      const sub = inspector.waitUntilFree(key, { waitTimeout: 5_000 }).subscribe({ error: () => undefined });
      await new Promise((resolve) => setTimeout(resolve, 50));
      sub.unsubscribe();
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      monitor.disconnect();
    }
    expect(seen.length).toBeGreaterThan(3);
    const commands = [...new Set(seen)];
    for (const command of commands) {
      if (command === 'multi' || command === 'exec') continue;
      const [entry] = (await suite.admin.call('COMMAND', 'INFO', command)) as Array<[string, number, string[]]>;
      expect(entry?.[2], command).not.toContain('write');
    }
    // still one waiter (the other process's), the key still the holder's
    expect(await suite.admin.zrange(line, '0', '-1')).toEqual(lineBefore);
    expect(await lastValueFrom(inspector.isLocked(key))).toBe(true);
    expect((inspector as unknown as { liveKeys: number }).liveKeys).toBe(0);
  });
});
