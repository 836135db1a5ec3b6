/**
 * Bad input gets a LockOptionsError that names the option and its allowed range, at once, with
 * nothing acquired.
 */
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, LockOptionsError, MemoryLockStore, setDefaultLocker, withLock, withPermit } from '../src/index.js';

function optionsError(fn: () => unknown): LockOptionsError {
  try {
    fn();
  } catch (error) {
    expect(isLockOptionsError(error)).toBe(true);
    return error as LockOptionsError;
  }
  throw new Error('expected a LockOptionsError, nothing was thrown');
}

const store = new MemoryLockStore();
const locker = createLocker({ store, keyPrefix: '' });

describe('keys', () => {
  for (const key of ['', 42, null, undefined, {}, 'x'.repeat(4097)]) {
    it(`rejects ${JSON.stringify(key)?.slice(0, 20)} as a key in acquire, withLock and the free withLock`, () => {
      for (const call of [
        () => locker.acquire(key as string),
        () => locker.withLock(key as string),
        () => withLock(key as string),
        () => locker.using(key as string, () => of(1)),
      ]) {
        const error = optionsError(call);
        expect(error.option).toBe('key');
        expect(error.message).toContain('a non-empty string of at most 4096 characters');
      }
      expect(store.size).toBe(0);
    });
  }
});

describe("the store's key check", () => {
  it('a key the store refuses is refused at once, with its prefix, wherever a key is taken (also when just used)', () => {
    const checked: string[] = [];
    const memory = Object.assign(new MemoryLockStore(), {
      checkKey(key: string): void {
        checked.push(key);
        if (key.endsWith('bad')) throw new LockOptionsError('key', 'a key this store keeps', key);
      },
    });
    const prefixed = createLocker({ store: memory, keyPrefix: 'p:' });
    const calls: Array<() => unknown> = [
      () => prefixed.acquire('bad'),
      () => prefixed.acquire('bad'), // the same key again
      () => prefixed.withLock('bad'),
      () => prefixed.acquireLocks(['ok', 'bad']),
      () => prefixed.withLocks(['bad']),
      () => prefixed.isLocked('bad'),
      () => prefixed.inspect('bad'),
      () => prefixed.waitUntilFree('bad'),
      () => prefixed.acquirePermit('bad', { limit: 1 }),
      () => prefixed.acquireReadLock('bad'),
      () => prefixed.isWriteLocked('bad'),
    ];
    for (const call of calls) {
      expect(optionsError(call).message).toContain('a key this store keeps');
    }
    expect(checked.filter((key) => key === 'p:bad')).toHaveLength(calls.length);
    expect(checked).toContain('p:ok');
    expect(memory.size).toBe(0);
    void prefixed.close();
  });
});

describe('times', () => {
  const cases: Array<[string, unknown, string]> = [
    ['ttl', -1, 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', 0, 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', NaN, 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', 1.5, 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', Infinity, 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', '100', 'an integer from 1 to 2147483647 (ms)'],
    ['ttl', 2 ** 31, 'an integer from 1 to 2147483647 (ms)'],
    ['waitTimeout', -5, 'an integer from 0 to 2147483647 (ms), or Infinity'],
    ['waitTimeout', NaN, 'an integer from 0 to 2147483647 (ms), or Infinity'],
    ['waitTimeout', 0.1, 'an integer from 0 to 2147483647 (ms), or Infinity'],
    ['commandTimeout', 0, 'an integer from 1 to 2147483647 (ms)'],
    ['commandTimeout', -1, 'an integer from 1 to 2147483647 (ms)'],
  ];
  for (const [option, value, allowed] of cases) {
    it(`rejects ${option} = ${String(value)} (${typeof value}) naming the range`, () => {
      const error = optionsError(() => createLocker({ [option]: value }));
      expect(error.option).toBe(option);
      expect(error.allowed).toBe(allowed);
      expect(error.message).toContain(`Invalid ${option}: expected ${allowed}`);
      if (option !== 'commandTimeout') {
        expect(optionsError(() => locker.acquire('k', { [option]: value })).option).toBe(option);
        expect(optionsError(() => withLock('k', { [option]: value })).option).toBe(option);
      }
    });
  }

  it('accepts the edges of each range', () => {
    expect(() => createLocker({ ttl: 1, renew: false, waitTimeout: 0, commandTimeout: 1 })).not.toThrow();
    expect(() => createLocker({ ttl: 4, waitTimeout: 0, commandTimeout: 1 })).not.toThrow();
    expect(() => createLocker({ ttl: 2_147_483_647, waitTimeout: Infinity, commandTimeout: 2_147_483_647 })).not.toThrow();
  });
});

describe('renewal and lease loss', () => {
  it('rejects a TTL too short to renew while renewal is on, naming ttl and the way out', () => {
    const error = optionsError(() => createLocker({ ttl: 3 }));
    expect(error.option).toBe('ttl');
    expect(error.allowed).toBe('an integer from 4 to 2147483647 (ms) while renewal is on (with renew: false, from 1)');
    expect(optionsError(() => locker.acquire('k', { ttl: 2 })).option).toBe('ttl');
    expect(() => locker.acquire('k', { ttl: 2, renew: false })).not.toThrow();
  });

  it('rejects a renewal interval that does not fit within the lease validity, naming the range', () => {
    // validity of a 1000 ms lease: 1000 − 10 − 2 = 988 ms
    const error = optionsError(() => createLocker({ ttl: 1000, renew: { interval: 988 } }));
    expect(error.option).toBe('renew.interval');
    expect(error.allowed).toBe('an integer from 1 to 987 (ms): below the validity of a 1000 ms lease (ttl − ttl·1% − 2 ms)');
    expect(() => createLocker({ ttl: 1000, renew: { interval: 987 } })).not.toThrow();
    // a per-call TTL is checked against the locker's interval too
    const renewing = createLocker({ store, renew: { interval: 500 } });
    expect(optionsError(() => renewing.acquire('k', { ttl: 400 })).option).toBe('renew.interval');
    for (const interval of [0, -1, 1.5, NaN, '10']) {
      expect(optionsError(() => createLocker({ renew: { interval: interval as number } })).option).toBe('renew.interval');
    }
  });

  it('rejects malformed renew and onLost values', () => {
    for (const renew of [true, null, 5, 'yes', []]) {
      const error = optionsError(() => createLocker({ renew: renew as never }));
      expect(error.option).toBe('renew');
      expect(error.allowed).toBe('false or { interval } (interval in ms)');
    }
    expect(optionsError(() => createLocker({ renew: { every: 5 } as never })).option).toBe('renew.every');
    const error = optionsError(() => withLock('k', { onLost: 'ignore' as never }));
    expect(error.option).toBe('onLost');
    expect(error.allowed).toBe("'error' or 'notify'");
  });
});

describe('retry', () => {
  it('rejects a retry that is neither an object nor a function', () => {
    const error = optionsError(() => createLocker({ retry: 10 as never }));
    expect(error.option).toBe('retry');
    expect(error.allowed).toContain('{ minDelay, jitter }');
  });

  it('rejects bad minDelay and jitter with their full names', () => {
    expect(optionsError(() => createLocker({ retry: { minDelay: -1 } })).option).toBe('retry.minDelay');
    expect(optionsError(() => locker.acquire('k', { retry: { jitter: NaN } })).option).toBe('retry.jitter');
  });

  it('rejects unknown retry options', () => {
    const error = optionsError(() => createLocker({ retry: { minDelay: 1, maxDelay: 5 } as never }));
    expect(error.option).toBe('retry.maxDelay');
    expect(error.allowed).toContain('minDelay, jitter');
  });
});

describe('unknown and malformed options', () => {
  it('rejects an unknown locker option, listing the known ones', () => {
    const error = optionsError(() => createLocker({ tll: 5 } as never));
    expect(error.option).toBe('options.tll');
    expect(error.allowed).toContain('ttl, waitTimeout, retry, renew, onLost, reentrant, store, commandTimeout, keyPrefix');
  });

  it('rejects locker-only options in a per-call override', () => {
    expect(optionsError(() => locker.acquire('k', { store } as never)).option).toBe('options.store');
    expect(optionsError(() => withLock('k', { keyPrefix: 'x' } as never)).option).toBe('options.keyPrefix');
  });

  it('rejects options that are not objects', () => {
    expect(optionsError(() => createLocker('fast' as never)).option).toBe('options');
    expect(optionsError(() => locker.acquire('k', [] as never)).option).toBe('options');
  });

  it('rejects a store that is not a LockStore, a bad keyPrefix, random or scheduler', () => {
    expect(optionsError(() => createLocker({ store: {} as never })).option).toBe('store');
    expect(optionsError(() => createLocker({ keyPrefix: 7 as never })).option).toBe('keyPrefix');
    expect(optionsError(() => createLocker({ random: 0.5 as never })).option).toBe('random');
    expect(optionsError(() => createLocker({ scheduler: {} as never })).option).toBe('scheduler');
  });

  it('rejects a locker that is not a Locker', () => {
    expect(optionsError(() => withLock('k', { locker: {} as never })).option).toBe('locker');
    expect(optionsError(() => setDefaultLocker({} as never)).option).toBe('locker');
  });

  it('raises errors that carry a name and survive a duplicate copy of the class', () => {
    const error = optionsError(() => createLocker({ ttl: -1 }));
    expect(error.name).toBe('LockOptionsError');
    expect(error).toBeInstanceOf(Error);
    expect(isLockOptionsError({ ...error, [Symbol.for('rxjs-lock/error')]: true, name: 'LockOptionsError' })).toBe(true);
    expect(isLockOptionsError(new Error('Invalid ttl'))).toBe(false);
  });
});

/**
 * The edges and rarer shapes of each option, found by mutating the checks (npm run
 * mutation:options): each case is an input a mutant took that it should refuse, a valid input a
 * mutant refused, or a refusal that named the wrong option or lost its range.
 */
describe('the edges of each check', () => {
  it('a key of exactly 4096 characters and a keyPrefix of exactly 1024 are accepted, one more is not', () => {
    expect(() => locker.acquire('k'.repeat(4096))).not.toThrow();
    expect(optionsError(() => locker.acquire('k'.repeat(4097))).option).toBe('key');
    expect(() => createLocker({ store, keyPrefix: 'p'.repeat(1024) })).not.toThrow();
    const error = optionsError(() => createLocker({ store, keyPrefix: 'p'.repeat(1025) }));
    expect(error.option).toBe('keyPrefix');
    expect(error.allowed).toBe('a string of at most 1024 characters, without lone UTF-16 surrogates');
  });

  it('null options are refused with LockOptionsError, not a TypeError, wherever options are taken', () => {
    expect(optionsError(() => createLocker(null as never)).option).toBe('options');
    expect(optionsError(() => locker.acquire('k', null as never)).option).toBe('options');
    expect(optionsError(() => withLock('k', null as never)).option).toBe('options');
    expect(optionsError(() => locker.acquirePermit('k', null as never)).option).toBe('options');
    expect(optionsError(() => withPermit('k', null as never)).option).toBe('options');
  });

  it('an options value that is not an object names what it should be an object of', () => {
    expect(optionsError(() => createLocker(5 as never)).allowed).toBe('an object of createLocker options');
    expect(optionsError(() => locker.acquire('k', 5 as never)).allowed).toBe('an object of acquire options');
    expect(optionsError(() => locker.withLock('k', { onBusy: 'skip', bogus: 1 } as never)).allowed).toContain('one of the known lock options: ');
    expect(optionsError(() => locker.withLock('k', { bogus: 1 } as never)).allowed).toContain('one of the known lock options: ');
    for (const options of [null, 5, []]) {
      const error = optionsError(() => locker.acquirePermit('k', options as never));
      expect(error.allowed).toBe('an object of permit options with at least { limit }');
      expect(optionsError(() => withPermit('k', options as never)).allowed).toBe('an object of permit options with at least { limit }');
    }
  });

  it('scheduler: both now() and schedule() are required, on an object', () => {
    const now = () => 0;
    const schedule = () => ({ unsubscribe() {} });
    expect(optionsError(() => createLocker({ scheduler: { now } as never })).option).toBe('scheduler');
    expect(optionsError(() => createLocker({ scheduler: { schedule } as never })).option).toBe('scheduler');
    expect(optionsError(() => createLocker({ scheduler: Object.assign(() => undefined, { now, schedule }) as never })).option).toBe('scheduler');
    expect(() => createLocker({ scheduler: { now, schedule } as never })).not.toThrow();
  });

  it('store: an object with tryAcquire, release and extend, each a function', () => {
    const fn = () => Promise.resolve(true);
    for (const bad of [
      { release: fn, extend: fn },
      { tryAcquire: fn, extend: fn },
      { tryAcquire: fn, release: fn },
      Object.assign(() => undefined, { tryAcquire: fn, release: fn, extend: fn }),
    ]) {
      const error = optionsError(() => createLocker({ store: bad as never }));
      expect(error.option).toBe('store');
      expect(error.allowed).toBe('a LockStore (an object with tryAcquire, release and extend)');
    }
  });

  it("onBusy: 'wait' (or left undefined) keeps the wait limit given; only 'skip' refuses one", () => {
    for (const onBusy of ['wait', undefined] as const) {
      expect(() => locker.withLock('k', { onBusy, waitTimeout: 500 })).not.toThrow();
      expect(() => withLock('k', { onBusy, waitTimeout: 500 })).not.toThrow();
    }
    const error = optionsError(() => locker.withLock('k', { onBusy: 'skip', waitTimeout: 500 }));
    expect(error.option).toBe('waitTimeout');
    expect(error.allowed).toBe("0 or left out with onBusy: 'skip' (it tries once, without waiting)");
    expect(optionsError(() => locker.withLock('k', { onBusy: 'never' as never })).allowed).toBe("'wait' or 'skip'");
  });

  it("onLost: 'error' and 'notify' are both accepted", () => {
    expect(() => createLocker({ store, onLost: 'error' })).not.toThrow();
    expect(() => locker.acquire('k', { onLost: 'notify' })).not.toThrow();
  });

  it('lease.extend(ttl) refuses a TTL with no validity left after the drift margin, naming the range', async () => {
    const lease = await firstValueFrom(locker.acquire('extend-edges'));
    try {
      for (const ttl of [1, 2]) {
        const error = await lease.extend(ttl).catch((e: unknown) => e);
        expect(isLockOptionsError(error)).toBe(true);
        expect((error as LockOptionsError).option).toBe('ttl');
        expect((error as LockOptionsError).allowed).toBe(
          'an integer from 3 to 2147483647 (ms): shorter leases have no validity left after the clock-drift margin',
        );
      }
      expect(await lease.extend(3)).toBe(true);
    } finally {
      await lease.release();
    }
  });

  it('retry: jitter or minDelay alone takes the default for the other; minDelay + jitter up to the largest timer', () => {
    expect(() => createLocker({ retry: { minDelay: 5 } })).not.toThrow();
    expect(() => createLocker({ retry: { jitter: 5 } })).not.toThrow();
    expect(() => createLocker({ retry: { minDelay: 1000, jitter: 2_147_483_647 - 1000 } })).not.toThrow();
    const error = optionsError(() => createLocker({ retry: { minDelay: 1000, jitter: 2_147_483_647 - 999 } }));
    expect(error.option).toBe('retry.jitter');
    expect(error.allowed).toBe('an integer from 0 to 2147482647 (ms), so that minDelay + jitter stays within 2147483647');
    expect(optionsError(() => createLocker({ retry: null as never })).allowed).toBe('{ minDelay, jitter } or a function (attempt) => ObservableInput');
    expect(optionsError(() => createLocker({ retry: { minDelay: 1, maxDelay: 5 } as never })).allowed).toContain('one of the known retry options: ');
  });

  it('renew: an empty object means the default interval; unknown names say they are renew options', () => {
    expect(() => createLocker({ renew: {} })).not.toThrow();
    expect(optionsError(() => createLocker({ renew: { every: 5 } as never })).allowed).toContain('one of the known renew options: interval');
  });

  it('cohort: each bound checked and named; false and the edges accepted', () => {
    const cases: Array<[unknown, string, string]> = [
      [5, 'cohort', 'false or { maxPasses, maxMs, roundMs, batchMs }'],
      [null, 'cohort', 'false or { maxPasses, maxMs, roundMs, batchMs }'],
      [[], 'cohort', 'false or { maxPasses, maxMs, roundMs, batchMs }'],
      [true, 'cohort', 'false or { maxPasses, maxMs, roundMs, batchMs }'],
      [{ maxPasses: -1 }, 'cohort.maxPasses', 'an integer from 0 to 1023'],
      [{ maxPasses: 1.5 }, 'cohort.maxPasses', 'an integer from 0 to 1023'],
      [{ maxPasses: '3' }, 'cohort.maxPasses', 'an integer from 0 to 1023'],
      [{ maxPasses: 1024 }, 'cohort.maxPasses', 'an integer from 0 to 1023'],
      [{ maxMs: -1 }, 'cohort.maxMs', 'an integer from 0 to 2147483647 (ms)'],
      [{ roundMs: -1 }, 'cohort.roundMs', 'an integer from 0 to 2147483647 (ms)'],
      [{ batchMs: 0.5 }, 'cohort.batchMs', 'an integer from 0 to 2147483647 (ms)'],
    ];
    for (const [cohort, option, allowed] of cases) {
      const error = optionsError(() => createLocker({ store, cohort: cohort as never }));
      expect(error.option, JSON.stringify(cohort)).toBe(option);
      expect(error.allowed, JSON.stringify(cohort)).toBe(allowed);
    }
    const unknown = optionsError(() => createLocker({ store, cohort: { passes: 1 } as never }));
    expect(unknown.option).toBe('cohort.passes');
    expect(unknown.allowed).toContain('one of the known cohort options: maxPasses');
    for (const cohort of [false, { maxPasses: 0 }, { maxPasses: 1023, maxMs: 0, roundMs: 0, batchMs: 0 }] as const) {
      expect(() => createLocker({ store, cohort })).not.toThrow();
    }
  });

  it('a locker made reentrant stays reentrant for a call that overrides another option', async () => {
    const reentrant = createLocker({ store, reentrant: true, keyPrefix: 'reentrant-default:' });
    const inner = await lastValueFrom(reentrant.using('k', () => reentrant.using('k', () => of('joined'), { ttl: 5000, waitTimeout: 0 })));
    expect(inner).toBe('joined');
    await reentrant.close();
  });

  it('permit options: limit and permits named with their ranges; reentrant refused; onBusy only for the operators', () => {
    const limit = optionsError(() => locker.acquirePermit('k', { limit: 0 }));
    expect(limit.option).toBe('limit');
    expect(limit.allowed).toBe('a positive safe integer (1 to 9007199254740991)');
    const permits = optionsError(() => locker.acquirePermit('k', { limit: 2, permits: 3 }));
    expect(permits.option).toBe('permits');
    expect(permits.allowed).toBe('an integer from 1 to 2 (the limit)');
    expect(optionsError(() => withPermit('k', { limit: 0 })).option).toBe('limit');
    expect(optionsError(() => withPermit('k', { limit: 2, permits: 3 })).option).toBe('permits');
    expect(() => withPermit('k', { limit: 2, permits: 2 })).not.toThrow();
    expect(optionsError(() => locker.acquirePermit('k', { limit: 2, reentrant: true } as never)).option).toBe('options.reentrant');
    expect(optionsError(() => locker.withPermit('k', { limit: 2, reentrant: true } as never)).option).toBe('options.reentrant');
    expect(() => locker.withPermit('k', { limit: 2, onBusy: 'skip' })).not.toThrow();
    expect(() => withPermit('k', { limit: 2, onBusy: 'skip' })).not.toThrow();
    expect(optionsError(() => locker.acquirePermit('k', { limit: 2, onBusy: 'skip' } as never)).option).toBe('options.onBusy');
    const unknown = optionsError(() => locker.withPermit('k', { limit: 2, count: 1 } as never));
    expect(unknown.allowed).toContain('onBusy, limit, permits');
    expect(optionsError(() => locker.acquirePermit('k', { limit: 2, count: 1 } as never)).allowed).toMatch(/onLost, limit, permits$/);
  });
});
