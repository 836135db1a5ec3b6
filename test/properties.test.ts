/**
 * Bad input, checked by generated input (fast-check): every key and every option object is either
 * accepted and works (a lock is taken and given back, nothing is left) or rejected at once with a
 * LockOptionsError that names an option and the allowed range, with a bounded message. Never a
 * TypeError from deep inside, a hang, an unhandled rejection, or a lock left behind.
 */
import fc from 'fast-check';
import { asyncScheduler, firstValueFrom, lastValueFrom, of, timeout } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockError, isLockOptionsError, LockOptionsError, MemoryLockStore, withLock, type Locker } from '../src/index.js';
import { FencedResource, RedisLockStore } from '../src/redis.js';
import { redisSuite } from './support/redisSuite.js';
import { allKeys } from './support/lockKeys.js';
import { sleep } from './support/timing.js';

/** Longest message an options error may have: the user's input in it is cut short. */
const MAX_MESSAGE = 600;
const LOCKER_OPTIONS = ['ttl', 'waitTimeout', 'retry', 'renew', 'onLost', 'store', 'commandTimeout', 'keyPrefix', 'random', 'scheduler', 'localGate', 'cohort'];

const suite = redisSuite({ flush: false });

/** Calls `make`; returns what it made, or the LockOptionsError it threw (anything else fails the test). */
function madeOrRefused<T>(make: () => T): { made: T } | { refused: LockOptionsError } {
  try {
    return { made: make() };
  } catch (error) {
    if (!isLockOptionsError(error)) throw new Error(`expected a LockOptionsError, got ${String(error)}`, { cause: error });
    expect(error.message.length).toBeLessThanOrEqual(MAX_MESSAGE);
    expect(error.option.length).toBeGreaterThan(0);
    expect(error.allowed.length).toBeGreaterThan(0);
    if (typeof error.received === 'string') expect(error.received.length).toBeLessThanOrEqual(MAX_MESSAGE);
    return { refused: error };
  }
}

/** A value of any kind, weighted towards the edges of numeric ranges. */
const anyValue = fc.oneof(
  fc.anything(),
  fc.integer(),
  fc.constantFrom(0, -1, 1, 2, 3, 4, 2 ** 31 - 1, 2 ** 31, Number.MAX_SAFE_INTEGER, Infinity, -Infinity, NaN, 0.5, -0),
  fc.double(),
  fc.string(),
  fc.constant(null),
  fc.constant(undefined),
  fc.func(fc.anything()),
);

/** Option objects: known names (mostly) with values of any kind, sometimes an unknown name. */
const optionObjects = fc.dictionary(fc.oneof(fc.constantFrom(...LOCKER_OPTIONS), fc.string()), anyValue, { maxKeys: 4 });

/** Takes and gives back a lock on `locker`, within a bound: the option set must really work. */
async function works(locker: Locker, key = 'k'): Promise<void> {
  const lease = await firstValueFrom(locker.acquire(key).pipe(timeout(2000)));
  expect(await lease.release()).toBe(true);
}

describe('keys (generated)', () => {
  const memory = new MemoryLockStore();
  const locker = createLocker({ store: memory, keyPrefix: '' });

  it('every string key is either refused at once or locks and unlocks, leaving nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string({ minLength: 4090, maxLength: 4100 }), fc.anything()),
        async (key) => {
          const result = madeOrRefused(() => locker.acquire(key as string));
          if ('refused' in result) {
            expect(result.refused.option).toBe('key');
            return;
          }
          const lease = await firstValueFrom(result.made.pipe(timeout(2000)));
          expect(lease.key).toBe(key);
          expect(await lease.release()).toBe(true);
          expect(memory.size).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('two different keys are never one lock: a lone surrogate is refused, not turned into U+FFFD', async () => {
    const error = madeOrRefused(() => locker.acquire('a\uD800'));
    expect('refused' in error && error.refused.option).toBe('key');
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1 }), fc.string({ unit: 'binary', minLength: 1 }), async (a, b) => {
        fc.pre(a !== b && a.isWellFormed() && b.isWellFormed());
        const leaseA = await firstValueFrom(locker.acquire(a));
        const leaseB = await firstValueFrom(locker.acquire(b, { waitTimeout: 0 }));
        await Promise.all([leaseA.release(), leaseB.release()]);
      }),
      { numRuns: 200 },
    );
  });

  it('a 1 MB key gives an error of bounded size, in the locker and in FencedResource', () => {
    const huge = 'x'.repeat(1_000_000);
    const makers: Array<() => unknown> = [() => locker.acquire(huge), () => withLock(huge), () => new FencedResource(suite.admin, huge)];
    for (const make of makers) {
      const result = madeOrRefused(make);
      expect('refused' in result).toBe(true);
    }
  });
});

describe('createLocker options (generated)', () => {
  it('are either refused at once, naming one of the options given, or work', async () => {
    await fc.assert(
      fc.asyncProperty(optionObjects, async (options) => {
        const result = madeOrRefused(() => createLocker(options as never));
        if ('refused' in result) {
          const named = result.refused.option.split('.')[0]!;
          expect([...Object.keys(options), 'options']).toContain(named);
          return;
        }
        await works(result.made);
        await result.made.close();
      }),
      { numRuns: 400 },
    );
  });

  it('per-call options are either refused at once or work', async () => {
    const locker = createLocker();
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.oneof(fc.constantFrom('ttl', 'waitTimeout', 'retry', 'renew', 'onLost'), fc.string()), anyValue, { maxKeys: 3 }),
        async (options) => {
          const result = madeOrRefused(() => locker.acquire('k', options as never));
          if ('refused' in result) return;
          const lease = await firstValueFrom(result.made.pipe(timeout(2000)));
          expect(await lease.release()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
    await locker.close();
  });

  it('known bad values are refused: random: null, a scheduler that is not one, unknown names', () => {
    for (const options of [
      { random: null },
      { random: 5 },
      { scheduler: {} },
      { scheduler: null },
      { tll: 5 },
      { store: {} },
      { store: null },
      { cohort: [] },
    ]) {
      expect('refused' in madeOrRefused(() => createLocker(options as never)), JSON.stringify(options)).toBe(true);
    }
    expect('made' in madeOrRefused(() => createLocker({ scheduler: asyncScheduler }))).toBe(true);
  });
});

describe('store constructors (generated)', () => {
  it('MemoryLockStore options are either refused or work', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(anyValue, fc.dictionary(fc.oneof(fc.constantFrom('clock', 'sweepInterval'), fc.string()), anyValue, { maxKeys: 2 })),
        async (options) => {
          const result = madeOrRefused(() => new MemoryLockStore(options as never));
          if ('refused' in result) return;
          const store = result.made;
          // a clock that is not a number source makes TTLs meaningless: it must still not throw raw errors
          const locker = createLocker({ store });
          try {
            await works(locker);
          } catch (error) {
            expect(isLockError(error), String(error)).toBe(true);
          }
          await locker.close();
          store.close();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('RedisLockStore clients and options are either refused at once or work on a real Redis', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constant(undefined),
          anyValue,
          fc.dictionary(fc.oneof(fc.constantFrom('wakeUp', 'subscriber', 'placeTtl', 'lingerMs'), fc.string()), anyValue, { maxKeys: 3 }),
        ),
        async (options) => {
          const result = madeOrRefused(() => new RedisLockStore(suite.admin, options as never));
          if ('refused' in result) return;
          const locker = createLocker({ store: result.made });
          await works(locker, 'prop:redis');
          await locker.close();
          result.made.close();
        },
      ),
      { numRuns: 150 },
    );
    for (const client of [null, undefined, {}, [], 'redis://localhost:6379', 42, { defineCommand: 1 }]) {
      const result = madeOrRefused(() => new RedisLockStore(client as never));
      expect('refused' in result && result.refused.option).toBe('client');
    }
    await sleep(20); // a fence counter outlives its grant by a few ms
    expect(await allKeys(suite.admin)).toEqual([]);
  });

  it('FencedResource keys and writes are either refused at once or work', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ unit: 'binary' }), fc.anything()), anyValue, anyValue, async (key, fence, value) => {
        const made = madeOrRefused(() => new FencedResource(suite.admin, key as string));
        if ('refused' in made) return;
        let written;
        try {
          written = await made.made.write(fence as number, value as string);
        } catch (error) {
          expect(isLockOptionsError(error), String(error)).toBe(true);
          return;
        }
        expect(typeof written.accepted).toBe('boolean');
        await suite.admin.del(key as string);
      }),
      { numRuns: 200 },
    );
  });
});

describe('the free withLock (generated options)', () => {
  it('is either refused at once or runs the source under the lock', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.oneof(fc.constantFrom('ttl', 'waitTimeout', 'retry', 'renew', 'onLost', 'locker'), fc.string()), anyValue, { maxKeys: 3 }),
        async (options) => {
          const result = madeOrRefused(() => withLock<number>('free', options as never));
          if ('refused' in result) return;
          expect(await lastValueFrom(of(1).pipe(result.made, timeout(2000)))).toBe(1);
        },
      ),
      { numRuns: 200 },
    );
  });
});
