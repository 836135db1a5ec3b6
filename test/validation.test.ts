/**
 * Bad input gets a LockOptionsError that names the option and its allowed range, at once, with
 * nothing acquired.
 */
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, LockOptionsError, MemoryLockStore, setDefaultLocker, withLock } from '../src/index.js';

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
