/**
 * What the Redis store does beyond the shared contract: the commands it sends (one script call
 * each to acquire, release and extend; one pipeline to extend many; a plain transaction to leave
 * the line), recovery when the server's script cache is empty, where its keys live (the reserved
 * namespace, one hash slot), and Lua kept in .lua files with shared pieces written once.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey, lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { allKeys } from '../support/lockKeys.js';
import { keySlot } from '../support/keySlot.js';
import { sleep } from '../support/timing.js';

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
  it('acquires with one script call and releases with one, and leaves nothing behind once released', async () => {
    const store = new RedisLockStore(client);
    // the first call on a connection may meet NOSCRIPT and send the source (EVAL); later ones the SHA
    await store.tryAcquire('warm-up', 'x', 1000);
    await store.release('warm-up', 'x');
    await admin.flushall();
    await admin.config('RESETSTAT');
    const locker = createLocker({ store, keyPrefix: 'app:', ttl: 7000 });
    const lease = await firstValueFrom(locker.acquire('k'));
    const pttl = await admin.pttl('app:k');
    expect(pttl).toBeGreaterThan(6000);
    expect(pttl).toBeLessThanOrEqual(7000);
    expect(await admin.get('app:k')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    const calls = await commandCalls();
    expect(calls.evalsha).toBe(2);
    expect(calls.eval).toBeUndefined();
    // the fence counter outlives the grant by a few ms only: then Redis holds nothing for the lock
    await sleep(20);
    expect(await allKeys(admin)).toEqual([]);
    await locker.close();
  });

  it('recovers from an empty script cache (NOSCRIPT) and goes back to calling by SHA', async () => {
    const store = new RedisLockStore(client);
    await store.tryAcquire('flushed', 'a', 10_000);
    await admin.script('FLUSH');
    expect(await store.extend('flushed', 'a', 20_000)).toBe('extended');
    expect(await store.release('flushed', 'a')).toBe(true);
    expect(await store.tryAcquire('flushed', 'b', 10_000)).toMatchObject({ acquired: true });
    await admin.config('RESETSTAT');
    expect(await store.release('flushed', 'b')).toBe(true);
    expect(await store.tryAcquire('flushed', 'c', 10_000)).toMatchObject({ acquired: true });
    const after = await commandCalls();
    expect(after.evalsha).toBe(2);
    expect(after.eval).toBeUndefined();
    await store.release('flushed', 'c');
  });

  it('tells an absent key from one taken by another token when extending', async () => {
    const store = new RedisLockStore(client);
    expect(await store.extend('ext:absent', 'a', 1000)).toBe('gone');
    await store.tryAcquire('ext:taken', 'b', 10_000);
    expect(await store.extend('ext:taken', 'a', 1000)).toBe('taken');
    expect(await admin.pttl('ext:taken')).toBeGreaterThan(5000);
  });

  it('extends many leases in one pipeline, each only for its owner, also after a script flush', async () => {
    const store = new RedisLockStore(client);
    const keys = Array.from({ length: 100 }, (_, i) => `batch:${i}`);
    for (const key of keys) await store.tryAcquire(key, `t-${key}`, 1000);
    await admin.set('batch:99', 'someone-else', 'PX', 1000);
    await admin.del('batch:98');
    await admin.script('FLUSH'); // the pipeline must also survive NOSCRIPT
    const outcomes = await store.extendMany(keys.map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
    expect(outcomes.slice(0, 98).every((o) => o === 'extended')).toBe(true);
    expect(outcomes[98]).toBe('gone');
    expect(outcomes[99]).toBe('taken');
    expect(await admin.pttl('batch:0')).toBeGreaterThan(50_000);
    expect(await admin.pttl('batch:99')).toBeLessThanOrEqual(1000);
    await admin.config('RESETSTAT');
    await store.extendMany(keys.slice(0, 10).map((key) => ({ key, token: `t-${key}`, ttlMs: 60_000 })));
    expect((await commandCalls()).evalsha).toBe(10);
  });

  it('leave by a token holding the key with no record of a hand-off to it gives the key back: not granted', async () => {
    const store = new RedisLockStore(client, { wakeUp: false });
    // taken by a plain acquire (the common path records no hand-off), then left as if handed over
    expect(await store.tryAcquire('tx:norecord', 'w', 10_000)).toMatchObject({ acquired: true });
    expect(await store.leave('tx:norecord', 'w')).toEqual({ granted: false });
    expect(await admin.get('tx:norecord')).toBeNull();
  });

  it('extendMany and extendSharedMany set the TTL each request asks for, in a pipeline and alone', async () => {
    const store = new RedisLockStore(client, { wakeUp: false });
    const keys = ['ttl:a', 'ttl:b', 'ttl:c'];
    for (const key of keys) expect(await store.tryAcquire(key, 't', 60_000)).toMatchObject({ acquired: true });
    for (const key of keys) expect(await store.tryAcquireShared(`shared:${key}`, 't', 60_000, 1, 2, 'leave')).toMatchObject({ acquired: true });
    const asked = (key: string) => ({ key, token: 't', ttlMs: 5_000 });
    expect(await store.extendMany(keys.slice(0, 2).map(asked))).toEqual(['extended', 'extended']);
    expect(await store.extendMany([asked(keys[2]!)])).toEqual(['extended']);
    expect(await store.extendSharedMany(keys.slice(0, 2).map((key) => asked(`shared:${key}`)))).toEqual(['extended', 'extended']);
    expect(await store.extendSharedMany([asked(`shared:${keys[2]}`)])).toEqual(['extended']);
    for (const key of keys) {
      const pttl = await admin.pttl(key);
      expect(pttl, key).toBeGreaterThan(0);
      expect(pttl, key).toBeLessThanOrEqual(5_000);
      const holder = (await store.inspectShared(`shared:${key}`))!.holders[0]!;
      expect(holder.ttl, key).toBeGreaterThan(0);
      expect(holder.ttl, key).toBeLessThanOrEqual(5_000);
    }
  });

  it('extendMany and extendSharedMany of a single lease answer its failure as its entry, as for a lease of a batch: they do not reject', async () => {
    const lost = connect(server);
    const store = new RedisLockStore(lost, { wakeUp: false });
    expect(await store.tryAcquire('one:fails', 't', 60_000)).toMatchObject({ acquired: true });
    expect(await store.tryAcquireShared('shared:one:fails', 't', 60_000, 1, 2, 'leave')).toMatchObject({ acquired: true });
    lost.disconnect(); // (closed for good: every command on it fails)
    const [alone] = await store.extendMany([{ key: 'one:fails', token: 't', ttlMs: 5_000 }]);
    expect(alone).toBeInstanceOf(Error);
    expect((alone as Error).message).toMatch(/Connection is closed/);
    const [sharedAlone] = await store.extendSharedMany([{ key: 'shared:one:fails', token: 't', ttlMs: 5_000 }]);
    expect(sharedAlone).toBeInstanceOf(Error);
    expect((sharedAlone as Error).message).toMatch(/Connection is closed/);
    // nothing was extended
    expect(await admin.pttl('one:fails')).toBeGreaterThan(5_000);
    store.close();
    const cleaner = new RedisLockStore(client, { wakeUp: false });
    expect(await cleaner.release('one:fails', 't')).toBe(true);
    expect(await cleaner.releaseShared('shared:one:fails', 't')).toBe(true);
  });

  it('leaves the line with plain commands in one transaction, never a script', async () => {
    const store = new RedisLockStore(client);
    await store.tryAcquireInLine('tx:leave', 'holder', 10_000, 1, 'keep');
    await store.tryAcquireInLine('tx:leave', 'waiter', 10_000, 1, 'keep');
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    expect(await store.leave('tx:leave', 'waiter')).toEqual({ granted: false });
    const calls = await commandCalls();
    expect(calls.multi).toBe(1);
    expect(calls.exec).toBe(1);
    expect(calls.evalsha).toBeUndefined();
    expect(calls.eval).toBeUndefined();
    await store.release('tx:leave', 'holder');
  });

  it("keeps helper keys in its own namespace and in the lock key's hash slot", () => {
    expect(lockKeys('lock:order:8')).toEqual([
      'lock:order:8',
      'rxjs-lock:fence:{lock:order:8}',
      'rxjs-lock:line:{lock:order:8}',
      'rxjs-lock:places:{lock:order:8}',
    ]);
    expect(helperKey('lock:{order:7}:line:1', 'line')).toBe('rxjs-lock:line:{order:7}:lock:{order:7}:line:1');
    // with an ioredis keyPrefix, the layout is that of the prefixed key
    expect(helperKey('k', 'line', 'app:')).toBe('rxjs-lock:line:{app:k}');
    for (const key of ['lock:order:8', 'lock:{order:7}:line:1', 'lock:{x}', 'a{b']) {
      expect(new Set(lockKeys(key).map(keySlot)).size, key).toBe(1);
    }
    expect(keySlot('123456789')).toBe(12739); // the reference value of the Redis Cluster spec
  });

  it('refuses keys in its own namespace, and keys whose helpers could not share their hash slot', () => {
    const store = new RedisLockStore(client);
    expect(() => store.checkKey('rxjs-lock:fence:{lock:a}')).toThrow(/namespace/);
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
    const unprefixed = createLocker({ store, keyPrefix: '' });
    expect(() => unprefixed.acquire('rxjs-lock:line:{job}')).toThrow(/namespace/);
  });

  it('issues fences that only grow, across stores and after the lock key is gone', async () => {
    const a = new RedisLockStore(client);
    const b = new RedisLockStore(admin);
    let last = 0;
    for (let i = 0; i < 20; i++) {
      const store = i % 2 === 0 ? a : b;
      const result = await store.tryAcquire('fence:grow', `t${i}`, 1000, 1 + (i % 3) * 100);
      if (!result.acquired) throw new Error('expected the key to be free');
      expect(result.fence).toBeGreaterThan(last);
      last = result.fence + (i % 3) * 100;
      await store.release('fence:grow', `t${i}`);
      if (i % 5 === 0) await sleep(5); // the counter is gone by now: the clock carries on
    }
  });

  it('rejects what is not an ioredis client, and unknown options, naming them', () => {
    for (const bad of [null, undefined, {}, 42, 'redis://localhost']) {
      const error = (() => {
        try {
          new RedisLockStore(bad as never);
        } catch (e) {
          return e;
        }
      })();
      expect(isLockOptionsError(error) && error.option).toBe('client');
    }
    for (const bad of [[], null, 5]) expect(() => new RedisLockStore(client, bad as never)).toThrow(/RedisLockStore options/);
    expect(() => new RedisLockStore(client, { placeTTL: 5 } as never)).toThrow(/options\.placeTTL/);
  });
});

describe('Lua sources', () => {
  it('the embedded copy matches the .lua files (npm run lua regenerates it)', () => {
    const script = fileURLToPath(new URL('../../scripts/embed-lua.mjs', import.meta.url));
    expect(() => execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  it('shared pieces are written once, in lua/lib, and included where used', () => {
    const dir = fileURLToPath(new URL('../../src/backends/redis/protocol/lua/', import.meta.url));
    const scripts = readdirSync(dir).filter((f) => f.endsWith('.lua'));
    for (const file of scripts) {
      const text = readFileSync(dir + file, 'utf8');
      expect(text, file).not.toMatch(/^local function /m);
    }
    for (const piece of ['firstLive', 'issueFences', 'serverClock']) {
      expect(luaScripts.acquire.source).toContain(`local function ${piece}(`);
      expect(luaScripts.release.source).toContain(`local function ${piece}(`);
    }
  });
});

describe('the reserved namespace, for direct callers of the store', () => {
  it('tryAcquire and tryAcquireInLine refuse a key in it, sending nothing', async () => {
    const store = new RedisLockStore(client);
    await admin.config('RESETSTAT');
    await expect(store.tryAcquire('rxjs-lock:fence:{job7}', 't', 1000)).rejects.toMatchObject({ name: 'LockOptionsError', option: 'key' });
    await expect(store.tryAcquireInLine('rxjs-lock:line:{job7}', 't', 1000, 1, 'keep')).rejects.toMatchObject({ name: 'LockOptionsError', option: 'key' });
    expect((await commandCalls()).evalsha).toBeUndefined();
  });
});
