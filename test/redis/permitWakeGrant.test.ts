/**
 * A semaphore's waiter in the store's line, woken by signals (as a mutex's is): it sleeps a slow
 * refresh of its place rather than polling, a release that grants it says so on its inbox with the
 * grant's fence, and the waiter holds from that signal without asking the store again. A place
 * kept before the waiter listened is looked at again soon, since a grant made in between was
 * announced to nobody.
 */
import { firstValueFrom, timer, map, race } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { WakeSignal } from '../../src/store/capabilities.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { countAttempts } from '../support/sharedStoreCalls.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** Long enough that a waiter's slow refresh (a quarter of it) outlasts every test here. */
const PLACE_TTL = 40_000;

function newLocker(): { locker: Locker; store: RedisLockStore } {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, { placeTtl: PLACE_TTL });
  const locker = createLocker({ store, retry: { minDelay: 5, jitter: 5 } });
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return { locker, store };
}

describe('a waiter for permits, woken by the grant signal', () => {
  it('sleeps in line without polling, and holds from the signal without another acquire call', async () => {
    const a = newLocker();
    const b = newLocker();
    const first: Lease = await firstValueFrom(a.locker.acquirePermit('sem', { limit: 1, ttl: 30_000 }));
    const attempts = countAttempts(b.store);
    const waiting = firstValueFrom(b.locker.acquirePermit('sem', { limit: 1, ttl: 30_000, waitTimeout: 20_000 }));
    // the first attempt queues before the waiter listens; one sent once the channel is live is heard
    await eventually(() => attempts.n >= 2);
    await sleep(100);
    const settled = attempts.n;
    await sleep(150); // polling at the retry policy's 5-10 ms would have sent several more
    expect(attempts.n).toBe(settled);
    await first.release();
    const second = await waiting;
    expect(attempts.n).toBe(settled); // held from the signal
    expect(second.fence).toBeGreaterThan(first.fence);
    // the store counts it as the holder: another waiter is refused until it releases
    expect(await a.store.tryAcquireShared('lock:sem', 'third', 1_000, 1, 1, 'leave')).toMatchObject({ acquired: false });
    expect(await second.release()).toBe(true);
    expect(await a.store.tryAcquireShared('lock:sem', 'third', 1_000, 1, 1, 'leave')).toMatchObject({ acquired: true });
  });

  it('a locker contended lately listens before its first attempt: that attempt is heard, no second one', async () => {
    const a = newLocker();
    const b = newLocker();
    const first: Lease = await firstValueFrom(a.locker.acquirePermit('sem3', { limit: 1, ttl: 30_000 }));
    // b meets contention once (its wait times out), so its channel is live and it counts as contended
    await expect(firstValueFrom(b.locker.acquirePermit('sem3', { limit: 1, waitTimeout: 50 }))).rejects.toMatchObject({ name: 'LockTimeoutError' });
    const attempts = countAttempts(b.store);
    const waiting = firstValueFrom(b.locker.acquirePermit('sem3', { limit: 1, ttl: 30_000, waitTimeout: 20_000 }));
    await eventually(() => attempts.n >= 1);
    await sleep(150); // an unheard place would be looked at again by the retry policy (5-10 ms)
    expect(attempts.n).toBe(1);
    await first.release();
    await (await waiting).release();
    expect(attempts.n).toBe(1);
  });

  it('does not miss a grant made after its place was kept but before it listened', async () => {
    const a = newLocker();
    const b = newLocker();
    // b's store already listens (another wait): its channel is live when the new wait starts
    const other = b.store.watch!('lock:other', 'other-token', () => undefined);
    suite.closers.push(() => other.stop());
    await other.ready;
    const first: Lease = await firstValueFrom(a.locker.acquirePermit('sem2', { limit: 1, ttl: 30_000 }));
    // b's first attempt is queued; before b hears the answer, a releases, which grants b's place
    // and announces it while b does not listen for it yet
    countAttempts(b.store, async (n) => {
      if (n !== 1) return;
      await first.release();
      await sleep(50); // (the announcement reaches b's inbox, where nobody listens for it yet)
    });
    const waited = await firstValueFrom(
      race(
        b.locker.acquirePermit('sem2', { limit: 1, ttl: 30_000, waitTimeout: 30_000 }).pipe(map((lease) => lease)),
        timer(4_000).pipe(map(() => 'still waiting' as const)), // (a slow refresh would be ≥ 10 s)
      ),
    );
    expect(waited).not.toBe('still waiting');
    const lease = waited as Lease;
    expect(lease.fence).toBeGreaterThan(first.fence);
    await lease.release();
  });

  it('a grant announced while its attempt is in flight: once that attempt is answered "queued", it looks again at once, not after a slow refresh', async () => {
    const a = newLocker();
    const b = newLocker();
    const first: Lease = await firstValueFrom(a.locker.acquirePermit('sem4', { limit: 1, ttl: 30_000 }));
    // b meets contention once, so it listens before its first attempt: that attempt is heard
    await expect(firstValueFrom(b.locker.acquirePermit('sem4', { limit: 1, waitTimeout: 50 }))).rejects.toMatchObject({ name: 'LockTimeoutError' });
    // The store queues b's attempt; before b hears that answer, a releases — granting b's place —
    // and the announcement reaches b while the attempt is still in flight.
    const attempts = countAttempts(b.store, async (n) => {
      if (n !== 1) return;
      await first.release();
      await sleep(100);
    });
    const waited = await firstValueFrom(
      race(
        b.locker.acquirePermit('sem4', { limit: 1, ttl: 30_000, waitTimeout: 30_000 }),
        timer(4_000).pipe(map(() => 'still waiting' as const)), // (its slow refresh: ≥ 10 s)
      ),
    );
    expect(waited).not.toBe('still waiting');
    expect(attempts.n).toBe(2); // the queued answer, then the look that found the grant
    const lease = waited as Lease;
    expect(lease.fence).toBeGreaterThan(first.fence);
    expect(await lease.release()).toBe(true);
  });

  it('with a slow retry policy and the channel already live: a place kept unheard is looked at again at once, not a policy step later', async () => {
    const a = newLocker();
    const b = newLocker();
    const other = b.store.watch!('lock:other5', 'other-token', () => undefined);
    suite.closers.push(() => other.stop());
    await other.ready;
    const first: Lease = await firstValueFrom(a.locker.acquirePermit('sem5', { limit: 1, ttl: 30_000 }));
    // as above: the grant to b's place is announced before b listens for it
    const attempts = countAttempts(b.store, async (n) => {
      if (n !== 1) return;
      await first.release();
      await sleep(50);
    });
    const started = performance.now();
    const waited = await firstValueFrom(
      race(
        b.locker.acquirePermit('sem5', { limit: 1, ttl: 30_000, waitTimeout: 30_000, retry: { minDelay: 8_000, jitter: 0 } }),
        timer(4_000).pipe(map(() => 'still waiting' as const)), // (the policy's step: 8 s)
      ),
    );
    expect(waited, `after ${Math.round(performance.now() - started)} ms`).not.toBe('still waiting');
    expect(attempts.n).toBe(2);
    await (waited as Lease).release();
  });

  it('the store dates a kept place, and announces no grant to the caller whose own call made it', async () => {
    const { store } = newLocker();
    const signals: WakeSignal[] = [];
    const watch = store.watch!('lock:own', 'W', (signal) => signals.push(signal));
    suite.closers.push(() => watch.stop());
    await watch.ready;
    expect((await store.tryAcquireShared('lock:own', 'H', 100, 1, 1, 'keep')).acquired).toBe(true);
    const queued = await store.tryAcquireShared('lock:own', 'W', 5_000, 1, 1, 'keep');
    expect(queued).toMatchObject({ acquired: false, queued: true });
    expect(typeof (queued as { at?: number }).at).toBe('number');
    await sleep(150); // H's lease ends unreleased: W's next call is granted from its place, by itself
    expect(await store.tryAcquireShared('lock:own', 'W', 5_000, 1, 1, 'keep')).toMatchObject({ acquired: true });
    await sleep(50);
    expect(signals.filter((s) => s.type === 'granted')).toEqual([]);
  });
});
