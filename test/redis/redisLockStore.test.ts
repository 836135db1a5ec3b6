/**
 * What the Redis store does beyond the shared contract: the exact commands it sends (SET NX PX to
 * acquire, EVALSHA to release and extend), recovery when the server's script cache is empty, and
 * Lua kept in .lua files with the embedded copy up to date.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect, EmbeddedRedis } from '../support/redis.js';

let server: EmbeddedRedis;
let client: Redis;
let admin: Redis;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  client = connect(server);
  admin = connect(server);
});
afterAll(async () => {
  client?.disconnect();
  admin?.disconnect();
  await server?.stop();
});

/** Calls per command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  return calls;
}

describe('RedisLockStore', () => {
  it('acquires with SET NX PX (one round trip) and releases with EVALSHA', async () => {
    const store = new RedisLockStore(client);
    await store.release('warm-up', 'x'); // the script is cached on the server from here on
    await admin.config('RESETSTAT');
    const locker = createLocker({ store, keyPrefix: 'app:', ttl: 7000 });
    const lease = await firstValueFrom(locker.acquire('k'));
    const pttl = await admin.pttl('app:k');
    expect(pttl).toBeGreaterThan(6000);
    expect(pttl).toBeLessThanOrEqual(7000);
    expect(await admin.get('app:k')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    const calls = await commandCalls();
    expect(calls.set).toBe(1);
    expect(calls.evalsha).toBe(1);
    expect(calls.eval).toBeUndefined();
  });

  it('recovers from an empty script cache (NOSCRIPT) and goes back to EVALSHA', async () => {
    const store = new RedisLockStore(client);
    await store.tryAcquire('flushed', 'a', 10_000);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    expect(await store.extend('flushed', 'a', 20_000)).toBe(true);
    expect(await store.release('flushed', 'a')).toBe(true);
    const calls = await commandCalls();
    // extend: EVALSHA → NOSCRIPT → EVAL (which caches it); release: EVALSHA → NOSCRIPT → EVAL
    expect(calls.eval).toBe(2);
    await admin.config('RESETSTAT');
    await store.tryAcquire('flushed', 'b', 10_000);
    expect(await store.release('flushed', 'b')).toBe(true);
    const after = await commandCalls();
    expect(after.evalsha).toBe(1);
    expect(after.eval).toBeUndefined();
  });
});

describe('Lua sources', () => {
  it('the embedded copy matches the .lua files (npm run lua regenerates it)', () => {
    const script = fileURLToPath(new URL('../../scripts/embed-lua.mjs', import.meta.url));
    expect(() => execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })).not.toThrow();
  });
});
