/**
 * Attack: bad input must give a LockOptionsError at once with a bounded message (the user's input
 * in it cut short, as test/properties.test.ts holds to 600 characters). The name of an unknown
 * option is user input too: an options object built from untrusted data (a parsed JSON config, a
 * request body spread into the options) can carry a key of any length.
 */
import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, MemoryLockStore, withLock, usingLock } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';

/** The bound test/properties.test.ts holds every options error to. */
const MAX_MESSAGE = 600;
const LONG = 'x'.repeat(10_000);

function refusal(make: () => unknown): { message: number; option: number } {
  try {
    make();
  } catch (error) {
    if (!isLockOptionsError(error)) throw error;
    return { message: error.message.length, option: error.option.length };
  }
  throw new Error('not refused');
}

/** A stand-in for an ioredis client: enough for the constructor's checks (nothing is sent). */
const fakeClient = { defineCommand: () => undefined, multi: () => undefined, pipeline: () => undefined } as unknown as ConstructorParameters<
  typeof RedisLockStore
>[0];

describe('attack: an unknown option with a very long name', () => {
  const cases: Array<[string, () => unknown]> = [
    ['createLocker options', () => createLocker({ [LONG]: 1 } as never)],
    ['cohort options', () => createLocker({ cohort: { [LONG]: 1 } } as never)],
    ['retry options', () => createLocker({ retry: { [LONG]: 1 } } as never)],
    ['renew options', () => createLocker({ renew: { [LONG]: 1 } } as never)],
    ['per-call acquire options', () => createLocker().acquire('k', { [LONG]: 1 } as never)],
    ['free withLock options', () => withLock('k', { [LONG]: 1 } as never)],
    ['free usingLock options', () => usingLock('k', () => [], { [LONG]: 1 } as never)],
    ['MemoryLockStore options', () => new MemoryLockStore({ [LONG]: 1 } as never)],
    ['RedisLockStore options', () => new RedisLockStore(fakeClient, { [LONG]: 1 } as never)],
  ];
  for (const [what, make] of cases) {
    it(`${what}: refused with a bounded message`, () => {
      const { message } = refusal(make);
      expect(message).toBeLessThanOrEqual(MAX_MESSAGE);
    });
  }
});
