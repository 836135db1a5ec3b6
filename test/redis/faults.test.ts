/**
 * Store faults on a real Redis that the test freezes (SIGSTOP), thaws, kills and restarts:
 * calls fail with LockStoreError after commandTimeout instead of hanging, release failures are
 * reported on events$ and never thrown, and the locker works again once Redis is back.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, of, timer } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockStoreError, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { lockKeyCount } from '../support/lockKeys.js';
import { eventually as eventuallyEvery } from '../support/timing.js';

const eventually = (check: () => Promise<boolean> | boolean, ms = 3000) => eventuallyEvery(check, ms, 10);

let server: EmbeddedRedis;
let client: Redis;
let observer: Redis;
let locker: Locker;
const events: LockEvent[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

const COMMAND_TIMEOUT = 200;

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await EmbeddedRedis.start();
  client = connect(server, { maxRetriesPerRequest: null });
  observer = connect(server);
  locker = createLocker({ store: new RedisLockStore(client), commandTimeout: COMMAND_TIMEOUT, ttl: 10_000, keyPrefix: '' });
  locker.events$.subscribe((e) => events.push(e));
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  client?.disconnect();
  observer?.disconnect();
  await server?.stop();
});
afterEach(() => {
  expect(unhandled).toEqual([]);
  events.length = 0;
});

describe('a paused Redis (SIGSTOP)', () => {
  it('fails an acquire with LockStoreError after commandTimeout, then works again after SIGCONT', async () => {
    server.pause();
    const started = performance.now();
    let error: unknown;
    try {
      error = await firstValueFrom(locker.acquire('paused')).catch((e: unknown) => e);
    } finally {
      server.resume();
    }
    const elapsed = performance.now() - started;
    expect(isLockStoreError(error)).toBe(true);
    expect(error).toMatchObject({ operation: 'acquire', key: 'paused' });
    expect(elapsed).toBeGreaterThanOrEqual(COMMAND_TIMEOUT - 5);
    expect(elapsed).toBeLessThan(COMMAND_TIMEOUT + 300);

    // The SET queued while Redis was frozen runs after SIGCONT and takes the key for nobody:
    // the engine gives it back.
    await eventually(() => events.some((e) => e.type === 'abandoned-released'));
    expect(await observer.exists('paused')).toBe(0);

    const lease = await firstValueFrom(locker.acquire('paused'));
    expect(await observer.get('paused')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
  });

  it('a release while paused resolves false, is reported on events$, and reaches no user code', async () => {
    const results: unknown[] = [];
    let completed = false;
    const done = lastValueFrom(timer(300).pipe(locker.withLock('held-while-paused'))).then(
      (v) => {
        results.push(v);
        completed = true;
      },
      (e: unknown) => results.push(e),
    );
    await eventually(() => events.some((e) => e.type === 'acquired')); // lock held, work running
    server.pause();
    try {
      await done;
      expect(completed).toBe(true);
      expect(results).toEqual([0]);
      expect(events.some((e) => e.type === 'release-failed')).toBe(true);
    } finally {
      server.resume();
    }
    const failed = events.find((e) => e.type === 'release-failed')!;
    expect(failed).toMatchObject({ key: 'held-while-paused' });
    expect(isLockStoreError((failed as { error: unknown }).error)).toBe(true);
    // The release went out before the freeze was noticed; once thawed Redis runs it.
    await eventually(async () => (await observer.exists('held-while-paused')) === 0);
  });
});

describe('a killed and restarted Redis', () => {
  it('reports the failed release on events$, errors new acquisitions with LockStoreError, and recovers after restart', async () => {
    const lease = await firstValueFrom(locker.acquire('crash'));
    await server.kill();

    expect(await lease.release()).toBe(false);
    const failed = events.find((e) => e.type === 'release-failed');
    expect(failed).toMatchObject({ key: 'crash', token: lease.token });

    const error = await firstValueFrom(locker.acquire('crash-2', { waitTimeout: 0 })).catch((e: unknown) => e);
    expect(isLockStoreError(error)).toBe(true);

    await server.restart();
    await eventually(async () => (await observer.ping().catch(() => 'down')) === 'PONG');
    const values = await lastValueFrom(of('after restart').pipe(locker.withLock('crash')));
    expect(values).toBe('after restart');
    await eventually(async () => (await lockKeyCount(observer)) === 0);
  });
});
