/**
 * Guards of a semaphore's waiter that holds from the 'granted' signal (src/engine/shared/SharedWait.ts),
 * on a real Redis, each pinned because mutation testing (npm run mutation:shared) found that no
 * test failed without it:
 *
 * - a signal the waiter cannot date against its place — one without the store's clock (`at`: what
 *   a Redis store with `replicaAcks` sends), or one for a place whose answer carried no `at` (a
 *   store that does not date its answers) — makes it ask the store, never hold directly: a forged
 *   signal while another process holds the only permit leaves it waiting;
 * - a grant taken from the signal lasts min(place TTL, TTL asked) from the sending of the attempt
 *   that kept the place, as the store's grant from the line does (its holder entry ends when the
 *   place would have lapsed): a lease that counted on the longer TTL it asked for would neither
 *   extend its key (a lease without renewal extends a grant shorter than it asked for once, at
 *   once) nor notice that Redis dropped it, and the next holder would overlap it;
 * - a signal handled after that validity passed makes the waiter ask the store: the lease it gets
 *   is valid when emitted;
 * - a wait listens on one wake-up watch at most, stops it when it ends (granted, abandoned, timed
 *   out), and a locker that meets no contention opens none.
 *
 * Scenario of the first four: A holds the only permit (20 s, renewed); B waits with a long place
 * TTL, so once its channel is live it sleeps a slow refresh of its place (a quarter of the place
 * TTL, jittered by a twelfth); the test acts just after a refresh, long before the next one.
 */
import { type Observable, type Subscription, firstValueFrom, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { AcquirePermitOptions, Lease } from '../../src/index.js';
import type { RedisLockStore, RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { redisSuite } from '../support/redisSuite.js';
import { countAttempts, countWatches, undatedAnswers } from '../support/sharedStoreCalls.js';
import { type SuiteLocker, suiteLocker } from '../support/suiteLocker.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** A fence no grant of these tests reaches: a lease with it came from a forged signal. */
const FORGED_FENCE = 999_999;

/** What a waiter's acquisition gave, as its subscriber saw it when the lease was emitted. */
interface Waiter {
  lease: Lease | undefined;
  error: unknown;
  /** `lease.held` when it was emitted. */
  heldAtGrant: boolean | undefined;
  /** `lease.validUntil − performance.now()` when it was emitted. */
  validLeftAtGrant: number | undefined;
  /** The store attempts the waiter had made when its lease was emitted. */
  attemptsAtGrant: number | undefined;
  /** Settles once the acquisition emitted or failed. */
  readonly done: Promise<void>;
  readonly subscription: Subscription;
}

/** Subscribes to `acquisition`, noting what the lease looked like at its emission (`attempts`: the waiter's store calls). */
function waitFor(acquisition: Observable<Lease>, attempts: { readonly n: number }): Waiter {
  let settle: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (settle = resolve));
  const waiter: Omit<Waiter, 'subscription'> = {
    lease: undefined,
    error: undefined,
    heldAtGrant: undefined,
    validLeftAtGrant: undefined,
    attemptsAtGrant: undefined,
    done,
  };
  const subscription = acquisition.subscribe({
    next: (lease) => {
      waiter.heldAtGrant = lease.held;
      waiter.validLeftAtGrant = lease.validUntil - performance.now();
      waiter.attemptsAtGrant = attempts.n;
      waiter.lease = lease;
      settle();
    },
    error: (error: unknown) => {
      waiter.error = error;
      settle();
    },
  });
  suite.closers.push(() => subscription.unsubscribe());
  return Object.assign(waiter, { subscription });
}

/** A and B of the scenario, B waiting in line (see the file's header). */
interface InLine {
  readonly a: Lease;
  readonly b: SuiteLocker;
  readonly waiter: Waiter;
  /** B's tryAcquireShared calls. */
  readonly attempts: { readonly n: number };
  /** B's token (its place in line) and the inbox its grants are announced on. */
  readonly token: string;
  readonly inbox: string;
  /** The store key of the semaphore. */
  readonly storeKey: string;
}

/**
 * A takes the only permit of `key` (ttl 20 s, renewed); B, a locker on a store with `bStore`
 * options (seen through `prepare`, then with its attempts counted), waits for it with `bOptions`.
 * Resolves once B is in line, its channel live, and it has just refreshed its place (its answer
 * heard): its next refresh is a sixth of the place TTL away at the least.
 */
async function waiterInLine(
  key: string,
  bStore: RedisLockStoreOptions,
  bOptions: Omit<AcquirePermitOptions, 'limit'>,
  prepare?: (store: RedisLockStore) => void,
): Promise<InLine> {
  const storeKey = `lock:${key}`;
  const line = helperKey(storeKey, 'shared-line');
  const places = helperKey(storeKey, 'shared-places');
  const a = await firstValueFrom(suiteLocker(suite).locker.acquirePermit(key, { limit: 1, ttl: 20_000 }));
  const b = suiteLocker(suite, {}, bStore);
  prepare?.(b.store);
  const attempts = countAttempts(b.store);
  const waiter = waitFor(b.locker.acquirePermit(key, { limit: 1, waitTimeout: 30_000, ...bOptions }), attempts);
  // the first attempt queues before B listens; the one sent once its channel is live is heard
  await eventually(async () => attempts.n >= 2 && (await suite.admin.zcard(line)) === 1, 5_000, 5, 'B waits in line, heard');
  await sleep(250); // (a place kept before the channel was live is looked at again at once)
  const token = (await suite.admin.zrange(line, '0', '0'))[0]!;
  // B's place: '<lapseAt> <ttl> <weight> <capacity> <placeTtl> <inbox>'; a refresh moves lapseAt
  const before = await suite.admin.hget(places, token);
  await eventually(async () => (await suite.admin.hget(places, token)) !== before, 10_000, 1, "B's next refresh");
  const inbox = (await suite.admin.hget(places, token))!.split(' ').at(-1)!;
  await sleep(50); // its answer heard: B sleeps in line, listening
  return { a, b, waiter, attempts, token, inbox, storeKey };
}

/** The store's clock now, as the scripts date places and grants (4 per µs since 2025-01-01). */
async function serverSeed(): Promise<number> {
  const [sec, usec] = await suite.admin.time();
  return (Number(sec) - 1_735_689_600) * 4_000_000 + Number(usec) * 4;
}

/**
 * Checks that B, handed a forged grant, asked the store instead of holding: one attempt more, no
 * lease, A still the only holder and B still in line; then A's release gives B a real grant.
 */
async function askedTheStore({ a, b, waiter, attempts, token, storeKey }: InLine, attemptsBefore: number): Promise<void> {
  await sleep(300);
  expect(waiter.lease?.fence).toBeUndefined(); // no lease (a forged one would have FORGED_FENCE)
  expect(waiter.error).toBeUndefined();
  expect(attempts.n).toBe(attemptsBefore + 1); // it asked, and the store answered: queued
  expect(a.held).toBe(true);
  const shared = await b.store.inspectShared(storeKey);
  expect(shared?.holders.map((h) => h.token)).toEqual([a.token]);
  expect(shared?.waiting).toBe(1);
  expect(await suite.admin.zscore(helperKey(storeKey, 'shared-line'), token)).not.toBeNull();
  await a.release();
  await waiter.done;
  expect(waiter.lease!.fence).not.toBe(FORGED_FENCE);
  expect(await waiter.lease!.release()).toBe(true);
}

describe('a grant signal the waiter cannot date against its place', () => {
  it('a signal without the store clock makes the waiter ask the store: no second holder', async () => {
    // (place TTL 6 s: refreshed every 1-2 s; TTL 20 s: a grant from the signal would be valid)
    const inLine = await waiterInLine('undated-signal', { placeTtl: 6_000 }, { ttl: 20_000 });
    const n = inLine.attempts.n;
    // as the release script announces a grant, without its last field (the store's clock)
    expect(await suite.admin.publish(inLine.inbox, `granted ${inLine.token} ${FORGED_FENCE} 0 1`)).toBe(1);
    await askedTheStore(inLine, n);
  });

  it('a place kept by an answer without the store clock: a signal, even dated now, makes the waiter ask the store', async () => {
    const inLine = await waiterInLine('undated-place', { placeTtl: 6_000 }, { ttl: 20_000 }, undatedAnswers);
    const n = inLine.attempts.n;
    // dated after every attempt B made: only the place's missing date can turn it away
    const at = await serverSeed();
    expect(await suite.admin.publish(inLine.inbox, `granted ${inLine.token} ${FORGED_FENCE} 0 1 ${at}`)).toBe(1);
    await askedTheStore(inLine, n);
  });
});

describe('a grant taken from the signal', () => {
  it("lasts the place TTL from the place's sending, not the longer TTL asked: the lease extends its key before the store drops it", async () => {
    const PLACE_TTL = 3_000;
    // (no renewal: a lease granted a TTL shorter than it asked for extends its key once, at once)
    const { a, b, waiter, attempts, storeKey } = await waiterInLine('place-ttl', { placeTtl: PLACE_TTL }, { ttl: 20_000, renew: false });
    const n = attempts.n;
    await a.release(); // hands the permit to B, which hears it on its inbox
    await Promise.race([waiter.done, sleep(5_000)]);
    const lease = waiter.lease!;
    expect(waiter.attemptsAtGrant).toBe(n); // held from the signal, without asking the store
    expect(waiter.heldAtGrant).toBe(true);
    // the store's grant from the line ends when B's place would have lapsed: the lease trusts no
    // more than the place TTL from the sending of the attempt that kept the place
    expect(waiter.validLeftAtGrant).toBeLessThanOrEqual(PLACE_TTL);
    // long after that grant would have ended, the lease is held, and so it is in Redis: its key was
    // extended to the TTL asked, the permit is nobody else's
    await sleep(PLACE_TTL + 1_000);
    expect(lease.held).toBe(true);
    const holders = (await b.store.inspectShared(storeKey))?.holders ?? [];
    expect(holders.map((h) => h.token)).toEqual([lease.token]);
    expect(holders[0]!.ttl).toBeGreaterThan(PLACE_TTL);
    await expect(firstValueFrom(suiteLocker(suite).locker.acquirePermit('place-ttl', { limit: 1, waitTimeout: 300 }))).rejects.toMatchObject({
      name: 'LockTimeoutError',
    });
    expect(await lease.release()).toBe(true);
  });

  it("handled after its validity (from the place's sending) passed makes the waiter ask the store: its lease is valid", async () => {
    // B's place is refreshed every 1-2 s (place TTL 6 s); a grant to it lasts 300 ms (its TTL)
    const { a, waiter, attempts } = await waiterInLine('late-signal', { placeTtl: 6_000 }, { ttl: 300 });
    const n = attempts.n;
    // released 600 ms after B's place was kept: the grant the signal announces had 300 ms from
    // that attempt's sending, so it is over by the time the signal comes
    await sleep(600);
    expect(attempts.n).toBe(n); // (no refresh meanwhile: the signal is what B hears next)
    await a.release();
    await Promise.race([waiter.done, sleep(5_000)]);
    expect(waiter.lease).toBeDefined();
    expect(waiter.attemptsAtGrant).toBeGreaterThan(n); // it asked the store
    expect(waiter.heldAtGrant).toBe(true); // not a lease lost already
    expect(waiter.validLeftAtGrant).toBeGreaterThan(0);
    await waiter.lease!.release();
  });
});

describe('the wake-up watches of a wait for permits', () => {
  /** A holds the only permit of `key` for as long as the test needs it (ttl 20 s, renewed). */
  const holder = (key: string): Promise<Lease> => firstValueFrom(suiteLocker(suite).locker.acquirePermit(key, { limit: 1, ttl: 20_000 }));

  it('a wait refused many times holds one watch at most, and stops it when granted', async () => {
    const a = await holder('watched');
    // place TTL 300 ms: the waiter refreshes its place every 50-100 ms, each a refusal
    const b = suiteLocker(suite, {}, { placeTtl: 300 });
    const watches = countWatches(b.store);
    const attempts = countAttempts(b.store);
    let liveAtGrant: number | undefined;
    const waiting = firstValueFrom(
      b.locker.acquirePermit('watched', { limit: 1, waitTimeout: 30_000 }).pipe(map((lease) => ((liveAtGrant = watches.live), lease))),
    );
    waiting.catch(() => undefined); // (awaited below; not an unhandled rejection if the test ends first)
    await eventually(() => attempts.n >= 8, 10_000, 5, 'refused again and again');
    expect(watches.opened).toBe(1);
    expect(watches.live).toBe(1);
    await a.release();
    const lease = await waiting;
    expect(liveAtGrant).toBe(0);
    expect(watches.most).toBe(1);
    expect(watches.live).toBe(0);
    await lease.release();
  });

  it('a wait that times out or is abandoned stops its watch', async () => {
    const a = await holder('watched-end');
    const b = suiteLocker(suite, {}, { placeTtl: 300 });
    const watches = countWatches(b.store);
    const attempts = countAttempts(b.store);
    await expect(firstValueFrom(b.locker.acquirePermit('watched-end', { limit: 1, waitTimeout: 1_500 }))).rejects.toMatchObject({ name: 'LockTimeoutError' });
    expect(attempts.n).toBeGreaterThanOrEqual(4);
    expect(watches.live).toBe(0);
    const before = attempts.n;
    const abandoned = b.locker.acquirePermit('watched-end', { limit: 1, waitTimeout: 30_000 }).subscribe({ error: () => undefined });
    await eventually(() => attempts.n >= before + 5, 10_000, 5, 'refused again and again');
    expect(watches.live).toBe(1);
    abandoned.unsubscribe();
    expect(watches.live).toBe(0);
    expect(watches.most).toBe(1);
    expect(watches.opened).toBe(2);
    await a.release();
  });

  it('an acquisition that meets no contention, on a fresh locker, opens no watch (and subscribes to nothing)', async () => {
    const channels = async () => new Set((await suite.admin.pubsub('CHANNELS', 'rxjs-lock:inbox:*')) as string[]);
    const before = await channels();
    const b = suiteLocker(suite);
    const watches = countWatches(b.store);
    for (let round = 0; round < 2; round++) {
      const lease = await firstValueFrom(b.locker.acquirePermit('free', { limit: 1 }));
      await lease.release();
    }
    expect(watches.opened).toBe(0);
    await sleep(300); // (a watch would have subscribed the store's inbox by now, and keeps it a while)
    expect([...(await channels())].filter((channel) => !before.has(channel))).toEqual([]);
  });
});
