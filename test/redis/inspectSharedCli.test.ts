/**
 * Shared locks (semaphores, read-write locks) in `scanSharedLocks` and in `npx rxjs-lock inspect`:
 * found by their holders' helper key, named back as the locker names them (keyPrefix cut, a hash
 * tag or an ioredis client prefix kept apart), filtered by the pattern with Redis's own glob rules,
 * listed with a row per holder (permits, `write` for a writer, TTL, fence) and the key's permits
 * used and waiters — escaped in the table like the mutexes' keys, exact in --json — and read-only.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { firstValueFrom, Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { globMatch } from '../../src/backends/redis/protocol/globMatch.js';
import { RedisLockStore, scanSharedLocks, type ListedSharedLock, type ScanningClient } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite();
const root = resolve(import.meta.dirname, '..', '..');

function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', resolve(root, 'src/cli.ts'), ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

function lockerOn(options: { keyPrefix?: string; clientPrefix?: string } = {}): Locker {
  const client = connect(suite.server, options.clientPrefix === undefined ? {} : { keyPrefix: options.clientPrefix });
  const store = new RedisLockStore(client);
  const locker = createLocker({
    store,
    ttl: 20_000,
    retry: { minDelay: 2, jitter: 3 },
    ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
  });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

/** Holds what `lease$` grants until the test ends (for a waiter: waits until then). */
function hold(lease$: ReturnType<Locker['acquirePermit']>): Promise<Lease> {
  const got = new Subject<Lease>();
  let lease: Lease | undefined;
  const held = lease$.subscribe({ next: (granted) => got.next((lease = granted)), error: () => undefined });
  suite.closers.push(
    () => held.unsubscribe(),
    () => lease?.release(),
  );
  return firstValueFrom(got);
}

async function listed(options: Parameters<typeof scanSharedLocks>[1] = {}): Promise<ListedSharedLock[]> {
  const all: ListedSharedLock[] = [];
  for await (const lock of scanSharedLocks(suite.admin as unknown as ScanningClient, options)) all.push(lock);
  return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

describe('scanSharedLocks', () => {
  it('lists semaphores and read-write locks with their holders, permits used and waiters; names them as the locker does', async () => {
    const a = lockerOn();
    const two = await hold(a.acquirePermit('renderer', { limit: 3, permits: 2 }));
    const one = await hold(a.acquirePermit('renderer', { limit: 3 }));
    void hold(a.acquirePermit('renderer', { limit: 3, permits: 2, waitTimeout: 30_000 })); // waits in line
    const writer = await hold(a.acquireWriteLock('{tenant-7}:config'));
    const reader = hold(a.acquireReadLock('{tenant-7}:config', { waitTimeout: 30_000 })); // waits behind the writer
    await hold(a.acquire('order:1')); // a mutex: scanLocks' business, not this one's
    await sleep(30);

    const locks = await listed();
    expect(locks.map((l) => l.key)).toEqual(['renderer', '{tenant-7}:config']);
    const [renderer, config] = locks as [ListedSharedLock, ListedSharedLock];
    expect(renderer).toMatchObject({ used: 3, waiting: 1 });
    expect(renderer.holders.map((h) => [h.token, h.weight, h.fence]).sort()).toEqual(
      [
        [one.token, 1, one.fence],
        [two.token, 2, two.fence],
      ].sort(),
    );
    expect(config).toMatchObject({ used: 2 ** 31 - 1, waiting: 1, holders: [{ token: writer.token, weight: 2 ** 31 - 1, fence: writer.fence }] });
    for (const h of [...renderer.holders, ...config.holders]) expect(h.ttl).toBeGreaterThan(10_000);
    await writer.release();
    await reader;
    expect((await listed({ pattern: '{tenant-7}*' }))[0]).toMatchObject({ used: 1, waiting: 0 });
  });

  it("honours the pattern (Redis's glob), the locker's keyPrefix and the client's keyPrefix", async () => {
    await hold(lockerOn().acquirePermit('pool:a', { limit: 2 }));
    await hold(lockerOn().acquirePermit('pool:b*c', { limit: 2 }));
    await hold(lockerOn({ keyPrefix: 'jobs/' }).acquireReadLock('nightly'));
    await hold(lockerOn({ clientPrefix: 'app:' }).acquirePermit('pool:z', { limit: 2 }));
    await hold(lockerOn({ clientPrefix: '{app}:' }).acquireWriteLock('pool:y'));
    expect((await listed({ pattern: 'pool:[ab]*' })).map((l) => l.key)).toEqual(['pool:a', 'pool:b*c']);
    expect((await listed({ pattern: 'pool:b\\*c' })).map((l) => l.key)).toEqual(['pool:b*c']);
    expect((await listed({ keyPrefix: 'jobs/' })).map((l) => l.key)).toEqual(['nightly']);
    expect((await listed({ clientPrefix: 'app:' })).map((l) => l.key)).toEqual(['pool:z']);
    expect((await listed({ clientPrefix: '{app}:' })).map((l) => l.key)).toEqual(['pool:y']);
    expect((await listed({ keyPrefix: '' })).map((l) => l.key)).toEqual(['jobs/nightly', 'lock:pool:a', 'lock:pool:b*c']);
  });

  it('matches names as Redis MATCH does', async () => {
    const names = ['pool:a', 'pool:ab', 'pool:b*c', 'pool:bxc', 'pool:[x]', 'pool:-', 'pool:\\', 'Pool:a', 'pool:', 'p?ol:a'];
    await suite.admin.sadd('names', ...names);
    const patterns = [
      '*',
      'pool:?',
      'pool:[ab]*',
      'pool:[^a]*',
      'pool:[a-b]',
      'pool:[b-a]',
      'pool:b\\*c',
      'pool:b*c',
      'pool:\\[x\\]',
      'pool:[\\-]',
      'pool:\\\\',
      'p\\?ol:*',
      '*:*b',
      'pool:[a',
      'pool:a\\',
    ];
    for (const pattern of patterns) {
      const [, byRedis] = await suite.admin.sscan('names', '0', 'MATCH', pattern, 'COUNT', 1000);
      expect({ pattern, matched: names.filter((name) => globMatch(pattern, name)).sort() }).toEqual({ pattern, matched: [...byRedis].sort() });
    }
  });
});

describe('rxjs-lock inspect (CLI) with shared locks', () => {
  it('lists them below the mutexes, a row per holder, keys escaped; --json gives them exactly; takes nothing', async () => {
    const a = lockerOn();
    const mutex = await hold(a.acquire('order:1'));
    const permit = await hold(a.acquirePermit('render\ner', { limit: 4, permits: 3 }));
    const writer = await hold(a.acquireWriteLock('config'));
    const url = `redis://${suite.server.host}:${suite.server.port}`;
    // (fence counters lapse by design, see lua/lib/fences.lua: not part of what a look could change)
    const lockKeys = async () => (await suite.admin.keys('*')).filter((k) => !k.includes('fence')).sort();
    const before = await lockKeys();

    const table = await cli('inspect', url);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const [mutexes, shared] = table.stdout.trimEnd().split('\n\n') as [string, string];
    expect(mutexes.split('\n')[1]!.split(/\s+/).slice(0, 2)).toEqual(['order:1', mutex.token]);
    const rows = shared.split('\n');
    expect(rows[0]).toMatch(/^SHARED KEY\s+HOLDER TOKEN\s+PERMITS\s+TTL \(ms\)\s+FENCE\s+USED\s+WAITING$/);
    expect(rows.slice(1).map((row) => row.split(/\s+/))).toEqual([
      ['config', writer.token, 'write', expect.stringMatching(/^\d+$/), String(writer.fence), String(2 ** 31 - 1), '0'],
      ['render\\ner', permit.token, '3', expect.stringMatching(/^\d+$/), String(permit.fence), '3', '0'],
    ]);

    const json = (await cli('inspect', url, '--json')).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(json.filter((l) => l.kind !== 'shared').map((l) => l.key)).toEqual(['order:1']);
    const sharedJson = json.filter((l) => l.kind === 'shared').sort((x, y) => (String(x.key) < String(y.key) ? -1 : 1));
    expect(sharedJson).toMatchObject([
      { key: 'config', used: 2 ** 31 - 1, waiting: 0, holders: [{ token: writer.token, weight: 2 ** 31 - 1, fence: writer.fence }] },
      { key: 'render\ner', used: 3, waiting: 0, holders: [{ token: permit.token, weight: 3, fence: permit.fence }] },
    ]);

    // only shared locks match: their table alone
    const onlyShared = await cli('inspect', url, 'config');
    expect(onlyShared.stdout.split('\n')[0]).toMatch(/^SHARED KEY/);
    expect((await cli('inspect', url, 'nothing*')).stdout).toBe('no held locks match\n');

    expect(await lockKeys()).toEqual(before); // no place in line, no key added or removed
  }, 120_000);
});
