/**
 * A store that implements only the core contract (tryAcquire, extend, release) gets every
 * operator, renewal, loss detection, the local gate, cohort hand-offs and events: the Redis store
 * seen through `coreOnly()` (no line, no wake-up, no batched extension, no key check), across two
 * lockers that stand for two processes.
 */
import type { Redis } from 'ioredis';
import { finalize, firstValueFrom, lastValueFrom, NEVER, of, timer } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, isLockTimeoutError, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { coreOnly, findOverlaps, monotonicNs, type CriticalSection } from '../../src/testing.js';
import { RecordingStore } from '../support/recordingStore.js';
import { allKeys } from '../support/lockKeys.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite({ unhandled: 'off' });
const clients: Redis[] = [];
afterAll(() => {
  for (const client of clients) client.disconnect();
});

/** A locker on a core-only view of its own Redis store; `calls` records what reached the store. */
function coreLocker(options: Parameters<typeof createLocker>[0] = {}): { locker: Locker; calls: RecordingStore; events: LockEvent[] } {
  const client = connect(suite.server);
  clients.push(client);
  const calls = new RecordingStore(coreOnly(new RedisLockStore(client)));
  const locker = createLocker({ ...options, store: calls });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  return { locker, calls, events };
}

describe('the engine on a core-only store', () => {
  it('withLock, using and acquire work, and fences grow', async () => {
    const { locker } = coreLocker();
    expect(await lastValueFrom(of('ok').pipe(locker.withLock('core:a')))).toBe('ok');
    const fences = await lastValueFrom(locker.using('core:a', (lease) => of(lease.fence)));
    const lease = await firstValueFrom(locker.acquire('core:a'));
    expect(lease.fence).toBeGreaterThan(fences);
    expect(await suite.admin.get('lock:core:a')).toBe(lease.token);
    expect(await lease.release()).toBe(true);
    await locker.close();
  });

  it('excludes across lockers (polling), with the local gate and cohort hand-offs inside each', async () => {
    const a = coreLocker({ retry: { minDelay: 2, jitter: 3 } });
    const b = coreLocker({ retry: { minDelay: 2, jitter: 3 } });
    const sections: CriticalSection[] = [];
    const fences: Array<{ at: bigint; fence: number }> = [];
    const run = (locker: Locker, owner: string) =>
      lastValueFrom(
        locker.using('core:hot', (lease) => {
          const enter = monotonicNs();
          fences.push({ at: enter, fence: lease.fence });
          return timer(1).pipe(finalize(() => sections.push({ enter, exit: monotonicNs(), owner })));
        }),
      );
    await Promise.all([...Array.from({ length: 20 }, () => run(a.locker, 'A')), ...Array.from({ length: 20 }, () => run(b.locker, 'B'))]);
    expect(sections).toHaveLength(40);
    expect(findOverlaps(sections)).toEqual([]);
    const ordered = fences.sort((x, y) => (x.at < y.at ? -1 : 1)).map((f) => f.fence);
    expect(ordered.every((f, i) => i === 0 || f > ordered[i - 1]!)).toBe(true);
    // the local gate: each locker's 20 waiters cost far fewer than 20 store attempts
    expect(a.calls.count('tryAcquire')).toBeLessThan(20);
    expect(a.events.some((e) => e.type === 'acquired' && e.passed)).toBe(true);
    await Promise.all([a.locker.close(), b.locker.close()]);
  });

  it('renews a lease that outlives its TTL, one extend per lease (no batch capability)', async () => {
    const { locker, calls, events } = coreLocker({ ttl: 300 });
    await lastValueFrom(timer(700).pipe(locker.withLock('core:long')));
    expect(events.filter((e) => e.type === 'renewed').length).toBeGreaterThanOrEqual(3);
    expect(calls.count('extend')).toBeGreaterThanOrEqual(3);
    expect(calls.count('extendMany')).toBe(0);
    await locker.close();
  });

  it('detects a lost lease (the key taken over) and errors the stream with LockLostError', async () => {
    const { locker, events } = coreLocker({ ttl: 300 });
    const ended = lastValueFrom(NEVER.pipe(locker.withLock('core:lost'))).catch((e: unknown) => e);
    await eventually(async () => (await suite.admin.exists('lock:core:lost')) === 1);
    await suite.admin.set('lock:core:lost', 'intruder', 'PX', 5000);
    const error = await ended;
    expect(isLockLostError(error) && error.reason).toBe('taken-over');
    expect(events.some((e) => e.type === 'lost')).toBe(true);
    await locker.close();
  });

  it('times out against another holder, and leaves nothing behind', async () => {
    const a = coreLocker();
    const b = coreLocker();
    const held = await firstValueFrom(a.locker.acquire('core:busy'));
    const error = await firstValueFrom(b.locker.acquire('core:busy', { waitTimeout: 150 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(b.events.map((e) => e.type)).toEqual(['timed-out']);
    await held.release();
    await Promise.all([a.locker.close(), b.locker.close()]);
    await sleep(20);
    expect(await allKeys(suite.admin)).toEqual([]);
  });
});
