/**
 * `npx rxjs-lock inspect <redis-url> [pattern]`, run as a child process against a private Redis
 * holding locks taken by real lockers: it lists held locks with holder token, TTL, fence (for a
 * key handed over from the line) and waiters, honours the pattern and the locker's keyPrefix, and
 * skips the store's own helper keys and keys that are not locks.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { NEVER, Subject, firstValueFrom, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();
const root = resolve(import.meta.dirname, '..', '..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI from source (tsx) as a child process. */
function cli(...args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', resolve(root, 'src/cli.ts'), ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

const url = () => `redis://${suite.server.host}:${suite.server.port}`;
const jsonLines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

function lockerOn(keyPrefix?: string): { locker: Locker; store: RedisLockStore } {
  const client = connect(suite.server);
  const store = new RedisLockStore(client);
  const locker = createLocker({ store, ...(keyPrefix === undefined ? {} : { keyPrefix }) });
  suite.closers.push(async () => {
    await locker.close();
    store.close();
    client.disconnect();
  });
  return { locker, store };
}

/** Holds `key` until the test ends; resolves with the lease. */
function hold(locker: Locker, key: string): Promise<Lease> {
  const got = new Subject<Lease>();
  const held = locker.using(key, (lease) => (got.next(lease), NEVER), { ttl: 20_000 }).subscribe({ error: () => undefined });
  suite.closers.push(() => held.unsubscribe());
  return firstValueFrom(got);
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
}

describe('rxjs-lock inspect (CLI)', () => {
  it('lists held locks with holder token, TTL and waiters; a key handed over from the line shows its fence', async () => {
    const a = lockerOn();
    const b = lockerOn();
    const order1 = await hold(a.locker, 'order:1');
    const order2 = await hold(a.locker, 'order:2');
    // b waits for order:1 in the store's line
    const waiter = b.locker.using('order:1', () => NEVER, { ttl: 20_000, waitTimeout: 30_000 }).subscribe({ error: () => undefined });
    suite.closers.push(() => waiter.unsubscribe());
    await until(async () => (await a.store.inspect('lock:order:1'))?.waiting === 1, 'b stands in line for order:1');
    // order:3 goes from a to b through the line: Redis records that hand-off's fence
    const release3 = new Subject<void>();
    a.locker.using('order:3', () => release3).subscribe({ error: () => undefined });
    await until(async () => (await a.store.inspect('lock:order:3')) !== null, 'a holds order:3');
    let b3: Lease | undefined;
    const held3 = b.locker.using('order:3', (lease) => ((b3 = lease), NEVER), { ttl: 20_000, waitTimeout: 30_000 }).subscribe({ error: () => undefined });
    suite.closers.push(() => held3.unsubscribe());
    await until(async () => (await a.store.inspect('lock:order:3'))?.waiting === 1, 'b stands in line for order:3');
    release3.complete();
    await until(async () => b3 !== undefined, 'b holds order:3');
    expect((await a.store.inspect('lock:order:3'))?.fence).toBe(b3!.fence);

    const run = await cli('inspect', url(), 'order:*', '--json');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const listed = jsonLines(run.stdout).sort((x, y) => String(x.key).localeCompare(String(y.key)));
    expect(listed.map((l) => [l.key, l.token, l.waiting])).toEqual([
      ['order:1', order1.token, 1],
      ['order:2', order2.token, 0],
      ['order:3', b3!.token, 0],
    ]);
    for (const l of listed) {
      expect(l.ttl).toBeGreaterThan(0);
      expect(l.ttl).toBeLessThanOrEqual(20_000);
    }
    // Redis keeps the hand-off's record (and so the fence) only until the grantee's place would
    // have lapsed (placeTtl, 3 s): on a slow machine the CLI may come later
    expect([b3!.fence, undefined]).toContain(listed[2]!.fence);
    expect(listed[0]!.fence).toBeUndefined(); // an uncontended grant: Redis keeps no fence

    const table = await cli('inspect', url(), 'order:[12]');
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^KEY\s+HOLDER TOKEN\s+TTL \(ms\)\s+FENCE\s+WAITING$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 2))).toEqual([
      ['order:1', order1.token],
      ['order:2', order2.token],
    ]);
    expect(lines[1]!.split(/\s+/).at(-1)).toBe('1');
  });

  it("honours the pattern and the locker's keyPrefix; skips helper keys and keys that are not locks", async () => {
    const jobs = lockerOn('jobs/');
    const plain = lockerOn();
    const job = await hold(jobs.locker, 'nightly');
    const user = await hold(plain.locker, 'user:9');
    await suite.admin.hset('lock:a-hash', 'f', 'v'); // under the prefix, but no lock
    // a helper key of the store's own (what the fence counter of lock:zz looks like)
    await suite.admin.set('rxjs-lock:fence:{lock:zz}', '123', 'PX', 60_000);

    const underJobs = jsonLines((await cli('inspect', url(), '--prefix', 'jobs/', '--json')).stdout);
    expect(underJobs.map((l) => [l.key, l.token])).toEqual([['nightly', job.token]]);

    const users = jsonLines((await cli('inspect', url(), 'user:*', '--json')).stdout);
    expect(users.map((l) => [l.key, l.token])).toEqual([['user:9', user.token]]);

    // with no prefix at all every string key matches '*': the helper key must still be skipped
    const everything = jsonLines((await cli('inspect', url(), '--prefix', '', '--json')).stdout);
    expect(everything.map((l) => l.key).sort()).toEqual(['jobs/nightly', 'lock:user:9']);

    const none = await cli('inspect', url(), 'nothing:*');
    expect(none).toMatchObject({ code: 0, stdout: 'no held locks match\n' });
  });

  it('explains its usage and fails with code 2 on a bad command line, 1 when Redis cannot be reached', async () => {
    const usage = await cli('inspect');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/missing <redis-url>[\s\S]*Usage: rxjs-lock inspect/);
    expect((await cli('inspect', url(), '--bogus')).code).toBe(2);
    expect((await cli('--help')).stdout).toMatch(/^Usage: rxjs-lock inspect/);
    const down = await cli('inspect', 'redis://127.0.0.1:1');
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^rxjs-lock: .*ECONNREFUSED/);
  });

  it('takes nothing: the holders keep their keys and TTLs, no line or key is added', async () => {
    const a = lockerOn();
    await hold(a.locker, 'order:5');
    const before = (await suite.admin.keys('*')).sort();
    await cli('inspect', url());
    expect((await suite.admin.keys('*')).sort()).toEqual(before);
    expect(await lastValueFrom(a.locker.isLocked('order:5'))).toBe(true);
  });
});
