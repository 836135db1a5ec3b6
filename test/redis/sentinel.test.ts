/**
 * Issue 13 part 2, a Sentinel-managed client (`new Redis({ sentinels, name })`): the Redis store
 * and the locker work through it, and through a failover — the master killed, the Sentinel
 * promoting the replica, ioredis reconnecting to the new master — on real servers and a real
 * Sentinel started here (see ../support/sentinelGroup.ts). The tests run in order and share the
 * servers: the first ones before the failover, the failover, then what works after it.
 *
 * Across the failover: a lease held through it either keeps renewing on the new master or ends
 * with `LockLostError` (never an uncaught error, never an unhandled rejection); new acquisitions
 * succeed; their fences are above every fence issued before; the wake-up channel (a subscriber
 * duplicated from the Sentinel client) hands a released key to a waiter that would otherwise not
 * look again for a minute; and `replicaAcks` refuses grants once no replica is left.
 */
import type { Redis } from 'ioredis';
import { lastValueFrom, timer } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { sentinelGroup, type SentinelGroup } from '../support/sentinelGroup.js';
import { eventually } from '../support/timing.js';
import { holdUntilReleased, type Holding } from '../support/holding.js';
import { unhandledRejections } from '../support/unhandled.js';

interface Process {
  readonly locker: Locker;
  readonly events: LockEvent[];
}

const rejections = unhandledRejections();
let group: SentinelGroup;
let admin: Redis;
let p1: Process;
let p2: Process;
/** The wake-up waiter: its place in line lasts 2 minutes, so it refreshes it (and could find a grant) only every 40 s. */
let waiter: Process;
let acking: Process;
const closers: Array<() => Promise<void> | void> = [];
/** Every fence issued before the failover. */
const fencesBefore: number[] = [];

function newProcess(storeOptions: RedisLockStoreOptions = {}): Process {
  const redis = group.client();
  const store = new RedisLockStore(redis, storeOptions);
  const locker = createLocker({ store, ttl: 3000, commandTimeout: 1500 });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  closers.push(async () => {
    await locker.close();
    store.close();
  });
  return { locker, events };
}

beforeAll(async () => {
  rejections.start();
  group = await sentinelGroup();
  admin = group.client();
  p1 = newProcess();
  p2 = newProcess();
  waiter = newProcess({ placeTtl: 120_000 });
  acking = newProcess({ replicaAcks: { replicas: 1, timeout: 1000 } });
}, 60_000);

afterAll(async () => {
  rejections.stop();
  for (const close of closers.reverse()) await close();
  await group?.stop();
  expect(rejections.seen).toEqual([]);
});

/** Holds `key` until `release()` (see ../support/holding.ts), released after the test at the latest. */
function hold(locker: Locker, key: string, ttl?: number): Holding {
  const holding = holdUntilReleased(locker, key, ttl === undefined ? {} : { ttl });
  closers.push(holding.release);
  return holding;
}

/** Takes `key` once with `locker` and returns its fence, retrying store failures (a client still reconnecting) for up to 30 s. */
async function fenceOf(locker: Locker, key: string): Promise<number> {
  let fence = 0;
  await eventually(
    () =>
      lastValueFrom(locker.using(key, (lease) => Promise.resolve(lease.fence))).then(
        (f) => ((fence = f), true),
        () => false,
      ),
    30_000,
    100,
  );
  return fence;
}

/**
 * `p1` holds `key` while `waiter` queues for it (its first retry after 10 ms puts it in the store's
 * line; the next would come after a minute); `p1` releases. Resolves how long after the release
 * the waiter ran: only a wake-up signal can bring it the key within the 10 s the caller allows.
 */
async function handOffByWakeUp(key: string): Promise<number> {
  const holder = hold(p1.locker, key);
  await holder.lease;
  const waited = lastValueFrom(
    waiter.locker.using(key, () => Promise.resolve(performance.now()), {
      retry: (attempt: number) => timer(attempt === 1 ? 10 : 60_000),
      waitTimeout: 120_000,
    }),
  );
  await eventually(async () => (await admin.zcard(helperKey(`lock:${key}`, 'line'))) === 1, 10_000, 20);
  const releasedAt = performance.now();
  holder.release();
  expect(await holder.ended).toBe('done');
  return (await waited) - releasedAt;
}

describe('a Sentinel-managed client', () => {
  it('runs the locker before a failover: locks, fences, wake-up, replica acknowledgement', async () => {
    for (const key of ['a', 'b', 'c']) fencesBefore.push(await fenceOf(p1.locker, key), await fenceOf(p2.locker, key));
    expect(await handOffByWakeUp('w1')).toBeLessThan(10_000);
    fencesBefore.push(await fenceOf(acking.locker, 'acked'));
  });

  it('survives the failover: a lease held through it ends cleanly, new grants succeed with higher fences, wake-up and acknowledgement still work', async () => {
    const held = hold(p1.locker, 'held');
    const heldLease = await held.lease;
    // A lease too short to outlive the failover (Sentinel waits 400 ms before it even calls the
    // master down): its renewals fail and its stream ends with LockLostError.
    const short = hold(p1.locker, 'short', 300);
    const shortLease = await short.lease;
    fencesBefore.push(heldLease.fence, shortLease.fence);

    const killedAt = performance.now();
    await group.master.kill();
    const sinceKill = p1.events.length;
    await eventually(async () => (await group.masterPort().catch(() => 0)) === group.replica.port, 30_000, 100);
    console.info(`the Sentinel promoted the replica ${Math.round(performance.now() - killedAt)} ms after the master was killed`);
    // ioredis asks the Sentinel again on reconnecting: the clients find the promoted replica.
    await eventually(
      () =>
        admin.set('probe', '1').then(
          () => true,
          () => false,
        ),
      30_000,
      100,
    );

    // New acquisitions succeed, with fences above every fence issued before (seeded from the
    // promoted server's clock).
    const after = [await fenceOf(p1.locker, 'a'), await fenceOf(p2.locker, 'b'), await fenceOf(p2.locker, 'held-elsewhere')];
    for (const fence of after) expect(fence).toBeGreaterThan(Math.max(...fencesBefore));

    // The lease held through the failover either renewed on the new master or was lost: its
    // stream ends with the work's value or a LockLostError, nothing else.
    const heldEvents = () => p1.events.slice(sinceKill).filter((e) => e.key === 'lock:held' || e.key === 'held');
    await eventually(() => heldEvents().some((e) => e.type === 'renewed' || e.type === 'lost'), 30_000, 50);
    held.release();
    const end = await held.ended;
    expect(end === 'done' || (end as Error).name === 'LockLostError', String(end)).toBe(true);
    // (what happened, for the record)
    console.info(`lease held through the failover: ${end === 'done' ? 'kept (renewed on the new master)' : `lost (${(end as { reason?: string }).reason})`}`);

    const shortEnd = await short.ended;
    expect(shortEnd).toMatchObject({ name: 'LockLostError', key: 'short' });
    expect(p1.events.some((e) => e.type === 'lost' && e.key === 'short')).toBe(true);

    // Wake-up: the waiter's subscriber (a duplicate of a Sentinel client) found the new master.
    expect(await handOffByWakeUp('w2')).toBeLessThan(10_000);

    // replicaAcks through Sentinel: the promoted replica has no replica of its own.
    const refused = await lastValueFrom(acking.locker.using('acked', () => Promise.resolve('ran'))).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'ReplicaAckError', key: 'acked', acknowledged: 0, replicas: 1 });
    expect(await admin.get('lock:acked')).toBeNull();
  });
});
