/**
 * locker.isLocked / waitUntilFree / inspect: questions that take nothing, on a store with
 * `inspect` and on one with the core contract only.
 */
import { firstValueFrom, lastValueFrom, NEVER, Subject, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockCapabilityError,
  isLockOptionsError,
  isLockStoreError,
  isLockTimeoutError,
  MemoryLockStore,
  type LockStore,
} from '../../src/index.js';
import { coreOnly } from '../../src/store/capabilities.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function countingStore() {
  const store = new MemoryLockStore();
  const calls = { inspect: 0, tryAcquire: 0, extend: 0 };
  const inspect = store.inspect.bind(store);
  const tryAcquire = store.tryAcquire.bind(store);
  const extend = store.extend.bind(store);
  store.inspect = (...args) => (calls.inspect++, inspect(...args));
  store.tryAcquire = (...args) => (calls.tryAcquire++, tryAcquire(...args));
  store.extend = (...args) => (calls.extend++, extend(...args));
  return { store, calls };
}

describe('locker.isLocked', () => {
  it('answers from the store: false when free, true when another locker holds it; takes nothing', async () => {
    const { store, calls } = countingStore();
    const [mine, other] = [createLocker({ store }), createLocker({ store })];
    expect(await lastValueFrom(mine.isLocked('k'))).toBe(false);
    const lease = await firstValueFrom(other.acquire('k'));
    expect(await lastValueFrom(mine.isLocked('k'))).toBe(true);
    expect(calls.tryAcquire).toBe(1); // only the other locker's acquisition
    await lease.release();
    expect(await lastValueFrom(mine.isLocked('k'))).toBe(false);
    await Promise.all([mine.close(), other.close()]);
  });

  it("counts this locker's own holders without asking the store (a failing store still gets true)", async () => {
    const store = new MemoryLockStore();
    const failing: LockStore & { inspect(key: string): Promise<never> } = Object.assign(coreOnly(store), {
      inspect: () => Promise.reject(new Error('store down')),
    });
    const locker = createLocker({ store: failing });
    const held = locker.using('k', () => NEVER).subscribe({ error: () => undefined });
    await sleep(10);
    expect(await lastValueFrom(locker.isLocked('k'))).toBe(true);
    held.unsubscribe();
    await sleep(10);
    expect(isLockStoreError(await lastValueFrom(locker.isLocked('k')).catch((e: unknown) => e))).toBe(true);
    await locker.close();
  });

  it('with a core-only store, probes with an owner-checked extend: a free key stays free, a holder keeps its TTL', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: coreOnly(memory), keyPrefix: '' });
    expect(await lastValueFrom(locker.isLocked('free'))).toBe(false);
    expect(memory.holder('free')).toBeUndefined();
    await memory.tryAcquire('held', 'someone', 1_000);
    await sleep(200);
    const before = memory.pttl('held');
    expect(await lastValueFrom(locker.isLocked('held'))).toBe(true);
    expect(memory.holder('held')).toBe('someone');
    expect(memory.pttl('held')).toBeLessThanOrEqual(before);
    await locker.close();
  });

  it('throws LockOptionsError at once for an invalid key', () => {
    const locker = createLocker();
    expect(
      isLockOptionsError(
        (() => {
          try {
            locker.isLocked('');
          } catch (e) {
            return e;
          }
        })(),
      ),
    ).toBe(true);
    void locker.close();
  });
});

describe('locker.inspect', () => {
  it("gives the store's holder, TTL and fence, plus this locker's side; null when free", async () => {
    const store = new MemoryLockStore();
    const locker = createLocker({ store });
    expect(await lastValueFrom(locker.inspect('k'))).toBeNull();
    let fence = 0;
    const held = locker.using('k', (lease) => ((fence = lease.fence), NEVER), { ttl: 5_000 }).subscribe();
    await sleep(10);
    const waiting = locker.using('k', () => NEVER).subscribe({ error: () => undefined });
    await sleep(10);
    const info = await lastValueFrom(locker.inspect('k'));
    expect(info).toMatchObject({ token: store.holder('lock:k'), fence, waiting: 0, heldHere: true, waitingHere: 1 });
    expect(info!.ttl).toBeGreaterThan(4_000);
    waiting.unsubscribe();
    held.unsubscribe();
    await locker.close();
  });

  it('errors with LockCapabilityError naming inspect on a store without it', async () => {
    const locker = createLocker({ store: coreOnly(new MemoryLockStore()) });
    const error = await lastValueFrom(locker.inspect('k')).catch((e: unknown) => e);
    expect(isLockCapabilityError(error)).toBe(true);
    expect(error).toMatchObject({ capability: 'inspect', key: 'k' });
    await locker.close();
  });
});

describe('locker.waitUntilFree', () => {
  for (const [name, wrap] of [
    ['a store with inspect', (s: MemoryLockStore): LockStore => s],
    ['a core-only store', (s: MemoryLockStore): LockStore => coreOnly(s)],
  ] as const) {
    it(`emits once the holder is gone, without taking the key (${name})`, async () => {
      const memory = new MemoryLockStore();
      const [waiter, holder] = [createLocker({ store: wrap(memory), keyPrefix: '' }), createLocker({ store: memory, keyPrefix: '' })];
      const done = new Subject<void>();
      holder.using('k', () => done).subscribe({ error: () => undefined });
      await sleep(10);
      let freed = false;
      const waiting = lastValueFrom(waiter.waitUntilFree('k', { waitTimeout: 5_000 }), { defaultValue: 'none' }).then((v) => ((freed = true), v));
      await sleep(60);
      expect(freed).toBe(false);
      done.complete();
      expect(await waiting).toBeUndefined();
      expect(memory.holder('k')).toBeUndefined(); // free, and not taken by the waiter
      await Promise.all([waiter.close(), holder.close()]);
    });
  }

  it("waits for this locker's own holder too", async () => {
    const locker = createLocker();
    const done = new Subject<void>();
    locker.using('k', () => done).subscribe({ error: () => undefined });
    await sleep(5);
    const order: string[] = [];
    const waited = lastValueFrom(locker.waitUntilFree('k'), { defaultValue: undefined }).then(() => order.push('free'));
    await sleep(50);
    order.push('release');
    done.complete();
    await waited;
    expect(order).toEqual(['release', 'free']);
    await locker.close();
  });

  it('errors with LockTimeoutError when the key stays held for the whole waitTimeout', async () => {
    const locker = createLocker();
    locker.using('k', () => timer(2_000)).subscribe({ error: () => undefined });
    await sleep(5);
    const error = await lastValueFrom(locker.waitUntilFree('k', { waitTimeout: 100 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'k' });
    await locker.close();
  });

  it('caps each sleep by the holder’s remaining TTL: a lapsing holder is noticed long before a slow back-off', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: memory, keyPrefix: '' });
    await memory.tryAcquire('k', 'crashed-holder', 300);
    const started = performance.now();
    await lastValueFrom(locker.waitUntilFree('k', { waitTimeout: 60_000, retry: { minDelay: 30_000, jitter: 0 } }), { defaultValue: undefined });
    expect(performance.now() - started).toBeLessThan(10_000);
    await locker.close();
  });

  it('stops looking when unsubscribed', async () => {
    const { store, calls } = countingStore();
    const locker = createLocker({ store, keyPrefix: '' });
    await store.tryAcquire('k', 'other', 10_000);
    const subscription = locker.waitUntilFree('k', { retry: { minDelay: 5, jitter: 0 } }).subscribe();
    await sleep(50);
    subscription.unsubscribe();
    const looked = calls.inspect;
    expect(looked).toBeGreaterThan(1);
    await sleep(50);
    expect(calls.inspect).toBe(looked);
    await locker.close();
  });

  it('refuses unknown options with LockOptionsError', () => {
    const locker = createLocker();
    let error: unknown;
    try {
      locker.waitUntilFree('k', { ttl: 5 } as never);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ option: 'options.ttl' });
    void locker.close();
  });
});
