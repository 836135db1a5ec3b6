/**
 * Multi-key locks in the engine, on the in-memory store: one wait limit for the whole set (on a
 * virtual clock), validation of the keys, `onLost: 'notify'` and the work's signal, the free
 * operators, and reentrancy (a set joining a key its enclosing stream holds; a stream nested in a
 * set's work joining one of its keys). The store-side behaviour is in test/contract/multiKeyContract.ts.
 */
import { firstValueFrom, lastValueFrom, NEVER, Observable, of, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockLostError,
  isLockOptionsError,
  isLockTimeoutError,
  MemoryLockStore,
  usingLocks,
  withLocks,
  type LockLostError,
  type LockOptionsError,
} from '../../src/index.js';
import { RecordingStore } from '../support/recordingStore.js';
import { eventually } from '../support/timing.js';
import { runUntil } from '../support/virtualTime.js';

const optionOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (error) {
    if (isLockOptionsError(error)) return (error as LockOptionsError).option;
    throw error;
  }
  return undefined;
};

describe('one wait limit for the whole set (virtual clock)', () => {
  it('counts waitTimeout from subscription: a key that frees late leaves the next key only what is left', async () => {
    const scheduler = new TestScheduler((a, b) => expect(a).toEqual(b));
    const memory = new MemoryLockStore({ clock: () => scheduler.now() });
    const locker = createLocker({ store: memory, scheduler, keyPrefix: '', retry: { minDelay: 50, jitter: 0 }, waitTimeout: 400 });
    await memory.tryAcquire('a', 'holder', 300); // frees at 300
    await memory.tryAcquire('b', 'holder', 1_000_000);
    const outcome: { error?: unknown; at?: number; sub?: Subscription } = {};
    outcome.sub = of(1)
      .pipe(locker.withLocks(['b', 'a']))
      .subscribe({
        error: (error) => {
          outcome.error = error;
          outcome.at = scheduler.now();
        },
      });
    await runUntil(scheduler, () => outcome.error !== undefined);
    // 'a' was taken at 300 or 350; a limit per key would have waited for 'b' until 700 or later
    expect(outcome.at).toBe(400);
    expect(isLockTimeoutError(outcome.error) && [outcome.error.key, outcome.error.waitedMs]).toEqual(['b', 400]);
    expect(memory.holder('a')).toBeUndefined();
    await locker.close();
  });
});

describe('validation', () => {
  const locker = createLocker();
  const work = () => of(1);

  it('refuses a bad array (keys) and a bad key (keys[i]), naming them, before anything runs', () => {
    for (const take of [
      (keys: never) => locker.withLocks(keys),
      (keys: never) => locker.usingLocks(keys, work),
      (keys: never) => locker.acquireLocks(keys),
      (keys: never) => withLocks(keys, { locker }),
      (keys: never) => usingLocks(keys, work, { locker }),
    ]) {
      expect(optionOf(() => take([] as never))).toBe('keys');
      expect(optionOf(() => take('a' as never))).toBe('keys');
      expect(optionOf(() => take(Array.from({ length: 65 }, (_, i) => `k${i}`) as never))).toBe('keys');
      // at most 64 distinct keys: duplicates are not counted (65 entries of 64 keys are fine)
      expect(optionOf(() => take([...Array.from({ length: 64 }, (_, i) => `k${i}`), 'k0'] as never))).toBeUndefined();
      expect(optionOf(() => take(['a', ''] as never))).toBe('keys[1]');
      expect(optionOf(() => take(['a', 7] as never))).toBe('keys[1]');
      expect(optionOf(() => take(['a', 'b\uD800'] as never))).toBe('keys[1]');
      expect(optionOf(() => take(Array.from({ length: 64 }, (_, i) => `k${i}`) as never))).toBeUndefined();
    }
  });

  it('checks options as withLock does, and the work of usingLocks', () => {
    expect(optionOf(() => locker.withLocks(['a'], { ttl: 0 }))).toBe('ttl');
    expect(optionOf(() => locker.acquireLocks(['a'], { onBusy: 'skip' } as never))).toBe('options.onBusy');
    expect(optionOf(() => withLocks(['a'], { locker, waitTimeout: -1 }))).toBe('waitTimeout');
    expect(optionOf(() => usingLocks(['a'], 'work' as never, { locker }))).toBe('work');
  });

  it('counts a key given twice once, toward the limit too', async () => {
    // 66 entries naming 64 keys: taken, each key once (the limit is on distinct keys)
    const keys = [...Array.from({ length: 64 }, (_, i) => `k${i}`), 'k0', 'k1'];
    const all = await firstValueFrom(locker.acquireLocks(keys));
    expect(all.keys).toHaveLength(64);
    await all.release();
    // 65 distinct keys among 66 entries: refused, the message saying what is accepted
    expect(optionOf(() => locker.acquireLocks([...keys.slice(0, 65), 'k64']))).toBe('keys');
    expect(() => locker.acquireLocks([...keys.slice(0, 65), 'k64'])).toThrow(/at most 64 distinct keys/);
    expect(() => locker.acquireLocks([])).toThrow(/a non-empty array of at most 64 distinct keys/);
    const locks = await firstValueFrom(locker.acquireLocks(['k1', 'k0', 'k1']));
    expect(locks.keys).toEqual(['k0', 'k1']);
    await locks.release();
  });
});

describe("a lost key with onLost: 'notify', and the work's signal", () => {
  it('the work keeps running with the other keys held; lost$ and the signal tell which key was lost', async () => {
    const store = new MemoryLockStore();
    const locker = createLocker({ store, ttl: 300, renew: { interval: 50 } });
    let signal: AbortSignal | undefined;
    let lost: LockLostError | undefined;
    let finish!: () => void;
    const ended = lastValueFrom(
      locker.usingLocks(
        ['a', 'b'],
        (locks, s) => {
          signal = s;
          locks.lost$.subscribe((error) => (lost = error));
          return new Observable<string>((subscriber) => {
            finish = () => {
              subscriber.next('finished');
              subscriber.complete();
            };
          });
        },
        { onLost: 'notify' },
      ),
    );
    await eventually(() => signal !== undefined);
    await store.release('lock:b', store.holder('lock:b')!);
    await eventually(() => lost !== undefined);
    expect(lost!.key).toBe('b');
    expect(isLockLostError(signal!.reason) && signal!.reason.key).toBe('b');
    expect(store.holder('lock:a')).toBeDefined();
    finish();
    expect(await ended).toBe('finished');
    expect(store.holder('lock:a')).toBeUndefined();
    await locker.close();
  });
});

describe('the free operators', () => {
  it('withLocks and usingLocks take every key with the locker given', async () => {
    const store = new MemoryLockStore();
    const locker = createLocker({ store });
    const held = await lastValueFrom(of(0).pipe(withLocks(['y', 'x'], { locker }), (source) => source));
    expect(held).toBe(0);
    const inStore = await lastValueFrom(
      usingLocks(['y', 'x'], async (locks) => locks.keys.map((key) => store.holder(`lock:${key}`) === locks.leases.get(key)!.token), { locker }),
    );
    expect(inStore).toEqual([true, true]);
    expect(store.size).toBe(0);
    await locker.close();
  });
});

describe('reentrancy', () => {
  it('a set inside the work of a stream holding one of its keys joins that key and takes the others; the outer lock outlives the set', async () => {
    const memory = new MemoryLockStore();
    const store = new RecordingStore(memory);
    const locker = createLocker({ store, reentrant: true, waitTimeout: 300 });
    const seen = await lastValueFrom(
      locker.using('a', async (outer) => {
        const inner = await lastValueFrom(
          locker.usingLocks(['b', 'a'], async (locks) => ({ sameA: locks.leases.get('a')!.token === outer.token, b: memory.holder('lock:b') !== undefined })),
        );
        return { ...inner, aAfter: memory.holder('lock:a') !== undefined, bAfter: memory.holder('lock:b') !== undefined };
      }),
    );
    // the set's completion comes after its own keys were given back: 'a' (the outer stream's) is still held
    expect(seen).toEqual({ sameA: true, b: true, aAfter: true, bAfter: false });
    expect(store.calls.filter((c) => c.op === 'tryAcquire' && c.key === 'lock:a')).toHaveLength(1);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('a stream nested in the work of a set joins any key of the set', async () => {
    const store = new RecordingStore(new MemoryLockStore());
    const locker = createLocker({ store, reentrant: true, waitTimeout: 300 });
    const fences = await lastValueFrom(locker.usingLocks(['a', 'b'], (locks) => locker.using('b', async (nested) => [nested.fence, locks.fences.get('b')])));
    expect(fences[0]).toBe(fences[1]);
    expect(store.calls.filter((c) => c.op === 'tryAcquire')).toHaveLength(2);
    await locker.close();
  });

  it('without reentrant, a set inside the work of a stream holding one of its keys waits for it (LockTimeoutError), and gives back what it took', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: memory, waitTimeout: 100 });
    const error = await lastValueFrom(locker.using('b', () => locker.usingLocks(['a', 'b'], () => NEVER))).catch((e: unknown) => e);
    expect(isLockTimeoutError(error) && error.key).toBe('b');
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('a set taken without reentrant adds no hold: a reentrant acquisition nested in its work waits for it', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: memory });
    const error = await lastValueFrom(locker.usingLocks(['a', 'b'], () => locker.using('a', () => of('joined'), { reentrant: true, waitTimeout: 100 }))).catch(
      (e: unknown) => e,
    );
    expect(isLockTimeoutError(error) && error.key).toBe('a');
    expect(memory.size).toBe(0);
    await locker.close();
  });
});
