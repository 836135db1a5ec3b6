/**
 * What the Redis store does beyond the shared contract: the exact commands it sends (one EVALSHA
 * each to acquire, release and extend; a pipeline to extend many), recovery when the server's
 * script cache is empty, where the fence counter lives, and Lua kept in .lua files with the
 * embedded copy up to date.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { FENCE_STRIDE } from '../../src/store/LockStore.js';
import { luaScripts } from '../../src/backends/redis/lua/scripts.generated.js';
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
  it('acquires with one EVALSHA (SET NX PX and INCRBY of the fence inside) and releases with one EVALSHA', async () => {
    const store = new RedisLockStore(client);
    // cache both scripts on the server
    await store.tryAcquire('warm-up', 'x', 1000);
    await store.release('warm-up', 'x');
    await admin.config('RESETSTAT');
    const locker = createLocker({ store, keyPrefix: 'app:', ttl: 7000 });
    const lease = await firstValueFrom(locker.acquire('k'));
    const pttl = await admin.pttl('app:k');
    expect(pttl).toBeGreaterThan(6000);
    expect(pttl).toBeLessThanOrEqual(7000);
    expect(await admin.get('app:k')).toBe(lease.token);
    expect(await admin.get('{app:k}:fence')).toBe(String(lease.fence));
    expect(await lease.release()).toBe(true);
    const calls = await commandCalls();
    expect(calls.evalsha).toBe(2);
    expect(calls.set).toBe(1);
    expect(calls.incrby).toBe(1);
    expect(calls.eval).toBeUndefined();
  });

  it('recovers from an empty script cache (NOSCRIPT) and goes back to EVALSHA', async () => {
    const store = new RedisLockStore(client);
    await store.tryAcquire('flushed', 'a', 10_000);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    expect(await store.extend('flushed', 'a', 20_000)).toBe('extended');
    expect(await store.release('flushed', 'a')).toBe(true);
    expect(await store.tryAcquire('flushed', 'b', 10_000)).toMatchObject({ acquired: true });
    const calls = await commandCalls();
    // extend, release, acquire: EVALSHA → NOSCRIPT → EVAL (which caches it)
    expect(calls.eval).toBe(3);
    await admin.config('RESETSTAT');
    expect(await store.release('flushed', 'b')).toBe(true);
    expect(await store.tryAcquire('flushed', 'c', 10_000)).toMatchObject({ acquired: true });
    const after = await commandCalls();
    expect(after.evalsha).toBe(2);
    expect(after.eval).toBeUndefined();
  });

  it('tells an absent key from one taken by another token when extending', async () => {
    const store = new RedisLockStore(client);
    expect(await store.extend('ext:absent', 'a', 1000)).toBe('gone');
    await store.tryAcquire('ext:taken', 'b', 10_000);
    expect(await store.extend('ext:taken', 'a', 1000)).toBe('taken');
    expect(await admin.pttl('ext:taken')).toBeGreaterThan(5000);
  });

  it('extends many leases in one pipeline, each only for its owner', async () => {
    const store = new RedisLockStore(client);
    const keys = Array.from({ length: 100 }, (_, i) => `batch:${i}`);
    for (const key of keys) await store.tryAcquire(key, `t-${key}`, 1000);
    await admin.set('batch:99', 'someone-else', 'PX', 1000);
    await admin.del('batch:98');
    await admin.script('FLUSH'); // the pipeline must also survive NOSCRIPT
    await admin.config('RESETSTAT');
    const outcomes = await store.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
    expect(outcomes.slice(0, 98).every((o) => o === 'extended')).toBe(true);
    expect(outcomes[98]).toBe('gone');
    expect(outcomes[99]).toBe('taken');
    expect(await admin.pttl('batch:0')).toBeGreaterThan(50_000);
    expect(await admin.pttl('batch:99')).toBeLessThanOrEqual(1000);
    const calls = await commandCalls();
    // the first pipeline: every command answered NOSCRIPT; the first lease again by source (which
    // caches the script), the 99 others in a second pipeline by SHA
    expect(calls.evalsha).toBe(100 + 99);
    expect(calls.eval).toBe(1);
  });

  it('keeps the fence counter in the lock key\'s hash slot, and refuses keys that cannot share one', async () => {
    const store = new RedisLockStore(client);
    const tagged = await store.tryAcquire('lock:{order:7}:line:1', 'a', 1000);
    expect(tagged.acquired && (await admin.get('lock:{order:7}:line:1:fence'))).toBe(String(FENCE_STRIDE));
    const plain = await store.tryAcquire('lock:order:8', 'a', 1000);
    expect(plain.acquired && (await admin.get('{lock:order:8}:fence'))).toBe(String(FENCE_STRIDE));
    expect(() => store.checkKey('lock:a}b')).toThrow(/hash tag/);
    expect(() => store.checkKey('lock:{}b}')).toThrow(/hash tag/);
    expect(() => store.checkKey('lock:{a}b}')).not.toThrow();
    const locker = createLocker({ store });
    let error: unknown;
    try {
      locker.acquire('odd}key');
    } catch (e) {
      error = e;
    }
    expect(isLockOptionsError(error) && error.option).toBe('key');
  });

  it('issues fences that only grow, across stores and after the lock key is gone', async () => {
    const a = new RedisLockStore(client);
    const b = new RedisLockStore(admin);
    const fences: number[] = [];
    for (let i = 0; i < 20; i++) {
      const store = i % 2 === 0 ? a : b;
      const result = await store.tryAcquire('fence:grow', `t${i}`, 1000);
      if (!result.acquired) throw new Error('expected the key to be free');
      fences.push(result.fence);
      await store.release('fence:grow', `t${i}`);
    }
    expect(fences).toEqual(Array.from({ length: 20 }, (_, i) => (i + 1) * FENCE_STRIDE));
  });
});

describe('Lua sources', () => {
  it('the embedded copy matches the .lua files (npm run lua regenerates it)', () => {
    const script = fileURLToPath(new URL('../../scripts/embed-lua.mjs', import.meta.url));
    expect(() => execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  it('the scripts space fences FENCE_STRIDE apart, as the engine expects', () => {
    expect(luaScripts.acquire.source).toContain(`local stride = ${FENCE_STRIDE}`);
    expect(luaScripts.release.source).toContain(`ARGV[1], ${FENCE_STRIDE}`);
  });
});
