/**
 * Attacks on reentrant read-write locks (commit 4a22970) on a real Redis: a writer of another
 * locker (another process) must not get in while a hold joined to a write still runs — a
 * detached nested read that outlives the outer work, a joined acquire() lease released after the
 * outer ended, an outer unsubscribed — and each store lease is given back once.
 */
import { firstValueFrom, lastValueFrom, of, tap, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function lockers(): { locker: Locker; other: Locker; store: RedisLockStore; releases: () => number } {
  const client = connect(suite.server);
  const otherClient = connect(suite.server);
  const store = new RedisLockStore(client);
  let releases = 0;
  const releaseShared = store.releaseShared.bind(store);
  store.releaseShared = (key, token) => {
    releases++;
    return releaseShared(key, token);
  };
  const otherStore = new RedisLockStore(otherClient);
  const locker = createLocker({ store, keyPrefix: '', reentrant: true, ttl: 2_000 });
  const other = createLocker({ store: otherStore, keyPrefix: '', ttl: 2_000 });
  suite.closers.push(async () => {
    await locker.close();
    await other.close();
    store.close();
    otherStore.close();
    client.disconnect();
    otherClient.disconnect();
  });
  return { locker, other, store, releases: () => releases };
}

function otherWriter(other: Locker, key: string, log: string[]): Promise<unknown> {
  return lastValueFrom(
    of('w').pipe(
      tap(() => log.push('other writer in')),
      other.withWriteLock(key, { waitTimeout: 5_000 }),
    ),
  ).catch((e: unknown) => e);
}

describe('attack (Redis): joined holds that outlive the outer write', () => {
  it('a detached joined read keeps the write lease: the other process’s writer waits for it', async () => {
    const { locker, other, store, releases } = lockers();
    const log: string[] = [];
    const outer = lastValueFrom(
      locker.usingWriteLock('k', () => {
        locker.usingReadLock('k', () => timer(400).pipe(tap(() => log.push('detached read ends'))), { waitTimeout: 0 }).subscribe();
        return of('outer');
      }),
    );
    await sleep(50);
    expect((await store.inspectShared('k'))?.holders.length).toBe(1);
    const writer = otherWriter(other, 'k', log);
    await outer;
    expect(await writer).toBe('w');
    expect(log).toEqual(['detached read ends', 'other writer in']);
    expect(releases()).toBe(1);
  });

  it('a joined acquireReadLock() lease released after the outer work ended (twice): the writer gets in after it, one store release', async () => {
    const { locker, other, releases } = lockers();
    const log: string[] = [];
    let joined: Lease | undefined;
    const outer = lastValueFrom(
      locker.usingWriteLock('k', async () => {
        joined = await firstValueFrom(locker.acquireReadLock('k', { waitTimeout: 0 }));
      }),
    );
    await sleep(50);
    const writer = otherWriter(other, 'k', log);
    await sleep(300); // longer than a renewal interval would matter for: ttl 2 s, renewed
    log.push('joined release');
    await Promise.all([joined!.release(), joined!.release()]);
    await outer;
    expect(await writer).toBe('w');
    expect(log).toEqual(['joined release', 'other writer in']);
    expect(releases()).toBe(1);
  });

  it('outer write unsubscribed while a joined write runs detached: the lease outlives the outer, renewed past its TTL', async () => {
    const { locker, other, releases } = lockers();
    const log: string[] = [];
    const sub = locker
      .usingWriteLock('k', () => {
        locker.usingWriteLock('k', () => timer(2_500).pipe(tap(() => log.push('detached write ends'))), { waitTimeout: 0 }).subscribe();
        return timer(60_000);
      })
      .subscribe();
    await sleep(50);
    sub.unsubscribe();
    expect(await otherWriter(other, 'k', log)).toBe('w');
    expect(log).toEqual(['detached write ends', 'other writer in']);
    expect(releases()).toBe(1);
  });
});
