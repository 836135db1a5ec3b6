/**
 * The in-memory store's own rules, beside the store contract (test/contract/*, which every backend
 * passes): its constructor's option checks and the messages of its errors, Redis's expiry instant
 * on the injectable clock, the sweeper that bounds its memory, and the notes of recent refusals
 * that make a grant say `waiting: 1`. All on a virtual clock, with the sweep timer faked where it
 * matters: no sleeps.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isLockOptionsError, MemoryLockStore } from '../../src/index.js';
import { MAX_REFUSALS, REFUSED_LATELY_MS } from '../../src/backends/memory/RecentRefusals.js';
import { MAX_MS } from '../../src/options/limits.js';

/** The store's private parts a test looks at (as test/engine/attackTurns.test.ts does). */
interface Insides {
  entries: Map<string, unknown>;
  shared: { size: number };
  sweeper: ReturnType<typeof setInterval> | undefined;
  refusals: { last: Map<string, unknown> };
}
const insides = (store: MemoryLockStore) => store as unknown as Insides;

const stores: MemoryLockStore[] = [];
/** A store on a virtual clock: `time.now` is the store's `now`. */
function storeAt(start = 0, options: { sweepInterval?: number; placeTtl?: number } = {}) {
  const time = { now: start };
  const store = new MemoryLockStore({ clock: () => time.now, ...options });
  stores.push(store);
  return { store, time };
}

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/** The LockOptionsError `make` throws (fails the test when it throws anything else, or nothing). */
function refusal(make: () => unknown): { option: string; allowed: string; message: string; received: unknown } {
  try {
    make();
  } catch (error) {
    if (!isLockOptionsError(error)) throw error;
    return error;
  }
  throw new Error('not refused');
}

describe('MemoryLockStore options: bad input gets a LockOptionsError naming the option and the allowed range', () => {
  it('options that are not a plain object', () => {
    for (const options of [null, 5, true, 'fast', () => ({}), [], [1000]]) {
      const error = refusal(() => new MemoryLockStore(options as never));
      expect(error, String(options)).toMatchObject({ option: 'options', allowed: 'an object of MemoryLockStore options' });
      expect(error.message).toContain('Invalid options: expected an object of MemoryLockStore options');
    }
    expect(() => new MemoryLockStore(undefined)).not.toThrow();
    expect(() => new MemoryLockStore({})).not.toThrow();
  });

  it('an unknown option, named with the known ones', () => {
    const error = refusal(() => new MemoryLockStore({ sweepIntervall: 5 } as never));
    expect(error).toMatchObject({
      option: 'options.sweepIntervall',
      allowed: 'one of the known MemoryLockStore options: clock, sweepInterval, placeTtl',
      received: 5,
    });
    expect(error.message).toContain('options.sweepIntervall');
    expect(error.message).toContain('clock, sweepInterval, placeTtl');
  });

  it('placeTtl: an integer from 100 to MAX_MS', async () => {
    for (const placeTtl of [99, 0, -1, 100.5, MAX_MS + 1, Number.NaN, Number.POSITIVE_INFINITY, '3000', null]) {
      const error = refusal(() => new MemoryLockStore({ placeTtl: placeTtl as number }));
      expect(error, String(placeTtl)).toMatchObject({ option: 'placeTtl', allowed: `an integer from 100 to ${MAX_MS} (ms)` });
      expect(error.message).toContain(`Invalid placeTtl: expected an integer from 100 to ${MAX_MS} (ms)`);
    }
    for (const placeTtl of [100, 3000, MAX_MS]) {
      const { store } = storeAt(0, { placeTtl });
      await store.tryAcquireShared('s', 'a', 1000, 1, 1, 'keep');
      // a waiter is told how long its place lasts: the option's value
      expect(await store.tryAcquireShared('s', 'b', 1000, 1, 1, 'keep')).toMatchObject({ acquired: false, queued: true, placeTtl });
    }
  });

  it('clock: a function', () => {
    for (const clock of [5, 'performance.now', null, {}]) {
      const error = refusal(() => new MemoryLockStore({ clock: clock as never }));
      expect(error, String(clock)).toMatchObject({ option: 'clock', allowed: 'a function returning milliseconds' });
      expect(error.message).toContain('Invalid clock: expected a function returning milliseconds');
    }
  });

  it('sweepInterval: an integer from 1 to MAX_MS', () => {
    for (const sweepInterval of [0, -1, 1.5, MAX_MS + 1, Number.NaN, Number.POSITIVE_INFINITY, '1000', null]) {
      const error = refusal(() => new MemoryLockStore({ sweepInterval: sweepInterval as number }));
      expect(error, String(sweepInterval)).toMatchObject({ option: 'sweepInterval', allowed: `an integer from 1 to ${MAX_MS} (ms)` });
      expect(error.message).toContain(`Invalid sweepInterval: expected an integer from 1 to ${MAX_MS} (ms)`);
    }
    for (const sweepInterval of [1, 1000, MAX_MS]) stores.push(new MemoryLockStore({ sweepInterval }));
  });

  it("tryAcquireShared's weight, capacity and fences", async () => {
    const { store } = storeAt();
    await expect(store.tryAcquireShared('s', 'a', 1000, 0, 2, 'keep')).rejects.toMatchObject({
      name: 'LockOptionsError',
      option: 'weight',
      allowed: 'a positive safe integer',
      message: expect.stringContaining('Invalid weight: expected a positive safe integer'),
    });
    await expect(store.tryAcquireShared('s', 'a', 1000, 2, 1, 'keep')).rejects.toMatchObject({
      name: 'LockOptionsError',
      option: 'capacity',
      allowed: 'a safe integer from the weight (2)',
      message: expect.stringContaining('Invalid capacity: expected a safe integer from the weight (2)'),
    });
    await expect(store.tryAcquireShared('s', 'a', 1000, 1, 2, 'keep', 0)).rejects.toMatchObject({
      name: 'LockOptionsError',
      option: 'fences',
      allowed: 'an integer from 1 (a grant reserves at most 1,024)',
      message: expect.stringContaining('Invalid fences: expected an integer from 1 (a grant reserves at most 1,024)'),
    });
  });
});

describe("expiry on the store's clock: as Redis, held at the exact expiry instant, free 1 ms after", () => {
  it('a key: held, inspected, refused and counted at its expiry instant; free, -2 and not counted 1 ms after', async () => {
    const { store, time } = storeAt(1_000);
    await store.tryAcquire('k', 'a', 1000);
    time.now = 2_000;
    expect(store.size).toBe(1); // (size sweeps: the sweep keeps it too)
    expect(store.holder('k')).toBe('a');
    expect(store.pttl('k')).toBe(0);
    expect(await store.inspect('k')).toMatchObject({ token: 'a', ttl: 0 });
    expect(await store.tryAcquire('k', 'b', 1000)).toEqual({ acquired: false, holderTtl: 0 });
    expect(await store.extend('k', 'a', 1000)).toBe('extended');
    time.now = 3_001;
    expect(store.holder('k')).toBeUndefined();
    expect(store.pttl('k')).toBe(-2);
    expect(await store.inspect('k')).toBeNull();
    expect(store.size).toBe(0);
    expect((await store.tryAcquire('k', 'b', 1000)).acquired).toBe(true);
  });

  it('the sweep keeps a key at its expiry instant and drops it 1 ms after', () => {
    const { store, time } = storeAt();
    void store.tryAcquire('k', 'a', 500);
    time.now = 500;
    expect(store.size).toBe(1);
    expect(insides(store).entries.has('k')).toBe(true);
    time.now = 501;
    expect(store.size).toBe(0);
    expect(insides(store).entries.has('k')).toBe(false);
  });

  it("pttl: a free key's is -2, a held key's rounds up", async () => {
    const { store, time } = storeAt();
    expect(store.pttl('free')).toBe(-2);
    await store.tryAcquire('k', 'a', 1000);
    time.now = 0.5;
    expect(store.pttl('k')).toBe(1000);
  });

  it("a shared lock's holder: extended, released, inspected and counted at its lease's last instant (ZRANGEBYSCORE holders -inf (now), not 1 ms after", async () => {
    for (const act of ['extend', 'release', 'inspect', 'take'] as const) {
      for (const at of [1000, 1001]) {
        const { store, time } = storeAt();
        await store.tryAcquireShared('s', 'a', 1000, 1, 2, 'keep');
        time.now = at;
        const live = at === 1000;
        const what = `${act} at ${at}`;
        if (act === 'extend') expect(await store.extendShared('s', 'a', 1000), what).toBe(live ? 'extended' : 'gone');
        if (act === 'release') expect(await store.releaseShared('s', 'a'), what).toBe(live);
        if (act === 'inspect') {
          const info = await store.inspectShared('s');
          expect(info, what).toEqual(live ? { used: 1, holders: [{ token: 'a', weight: 1, fence: 1, ttl: 0 }], waiting: 0 } : null);
        }
        // (a weight of 2 fits only once the holder's permit is free)
        if (act === 'take') expect((await store.tryAcquireShared('s', 'b', 1000, 2, 2, 'keep')).acquired, what).toBe(!live);
      }
    }
  });

  it("a waiter's place lapses at its lapse instant (a place is live while lapseAt > now): not counted, not granted", async () => {
    for (const at of [99, 100]) {
      const { store, time } = storeAt(0, { placeTtl: 100 });
      await store.tryAcquireShared('s', 'a', 10_000, 1, 1, 'keep');
      expect(await store.tryAcquireShared('s', 'b', 10_000, 1, 1, 'keep')).toMatchObject({ queued: true, placeTtl: 100 });
      time.now = at;
      const live = at < 100;
      expect((await store.inspectShared('s'))?.waiting, `waiting at ${at}`).toBe(live ? 1 : 0);
      expect(await store.releaseShared('s', 'a')).toBe(true);
      // the release grants the place that is still live (for what is left of it), and drops a lapsed one
      expect(await store.inspectShared('s'), `after the release at ${at}`).toEqual(
        live ? { used: 1, holders: [{ token: 'b', weight: 1, fence: expect.any(Number), ttl: 1 }], waiting: 0 } : null,
      );
    }
  });
});

describe('the sweeper: expired keys leave memory without being touched; the timer runs only while the store keeps keys', () => {
  const timers = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });

  it('an expired key is swept out of memory every sweepInterval, and the timer stops once the store is empty', async () => {
    timers();
    const { store, time } = storeAt(0, { sweepInterval: 1000 });
    expect(insides(store).sweeper).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
    await store.tryAcquire('k', 'a', 500);
    await store.tryAcquire('j', 'b', 5000);
    expect(vi.getTimerCount()).toBe(1);
    time.now = 501;
    vi.advanceTimersByTime(1000);
    expect([...insides(store).entries.keys()]).toEqual(['j']);
    expect(vi.getTimerCount()).toBe(1); // 'j' is still held
    time.now = 5001;
    vi.advanceTimersByTime(1000);
    expect(insides(store).entries.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(insides(store).sweeper).toBeUndefined();
  });

  it("a shared lock's expired holders and lapsed places are swept too; the timer runs while either kind of key is kept", async () => {
    timers();
    const { store, time } = storeAt(0, { sweepInterval: 1000, placeTtl: 100 });
    await store.tryAcquireShared('s', 'a', 3000, 1, 1, 'keep');
    await store.tryAcquireShared('s', 'b', 3000, 1, 1, 'keep'); // a place, lapsed at 100
    await store.tryAcquire('k', 'a', 500);
    expect(vi.getTimerCount()).toBe(1);
    time.now = 1000;
    vi.advanceTimersByTime(1000);
    expect(insides(store).entries.size).toBe(0);
    expect(insides(store).shared.size).toBe(1);
    expect(vi.getTimerCount()).toBe(1); // the shared lock is still held
    time.now = 3001;
    vi.advanceTimersByTime(1000);
    expect(insides(store).shared.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a held key keeps the timer running while the shared locks are all gone', async () => {
    timers();
    const { store, time } = storeAt(0, { sweepInterval: 1000 });
    await store.tryAcquire('k', 'a', 5000);
    await store.tryAcquireShared('s', 'a', 500, 1, 1, 'keep');
    time.now = 1000;
    vi.advanceTimersByTime(1000);
    expect(insides(store).shared.size).toBe(0);
    expect(insides(store).entries.size).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    time.now = 5001;
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('one timer, however many keys; it starts again with the next key after it stopped', async () => {
    timers();
    const { store, time } = storeAt(0, { sweepInterval: 1000 });
    for (let i = 0; i < 5; i++) await store.tryAcquire(`k${i}`, 'a', 500);
    await store.tryAcquireShared('s', 'a', 500, 1, 1, 'keep');
    expect(vi.getTimerCount()).toBe(1);
    time.now = 501;
    expect(store.size).toBe(0); // (size sweeps, and stops the timer once nothing is left)
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
    await store.tryAcquire('k', 'a', 500);
    expect(vi.getTimerCount()).toBe(1);
    time.now = 1002;
    vi.advanceTimersByTime(1000);
    expect(insides(store).entries.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    await store.tryAcquireShared('s', 'a', 500, 1, 1, 'keep');
    expect(vi.getTimerCount()).toBe(1);
  });

  it("the timer is unref'd: it does not keep the process alive", async () => {
    const { store } = storeAt();
    await store.tryAcquire('k', 'a', 60_000);
    const sweeper = insides(store).sweeper as NodeJS.Timeout;
    expect(sweeper.hasRef()).toBe(false);
  });

  it('a runtime whose setInterval returns a number (no unref): the store works on', async () => {
    // (Node's timers always have unref; Deno's and browsers' setInterval returns a number: the store unrefs when it can)
    const cleared: unknown[] = [];
    vi.stubGlobal('setInterval', () => 7);
    vi.stubGlobal('clearInterval', (id: unknown) => cleared.push(id));
    const { store } = storeAt();
    expect((await store.tryAcquire('k', 'a', 1000)).acquired).toBe(true);
    store.close();
    expect(cleared).toEqual([7]);
  });

  it('close() stops the timer and forgets every key, mutex and shared', async () => {
    timers();
    const { store } = storeAt(0, { sweepInterval: 1000 });
    await store.tryAcquire('k', 'a', 60_000);
    await store.tryAcquireShared('s', 'a', 60_000, 1, 1, 'keep');
    await store.tryAcquireShared('s', 'b', 60_000, 1, 1, 'keep');
    expect(vi.getTimerCount()).toBe(1);
    store.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(insides(store).sweeper).toBeUndefined();
    expect(store.holder('k')).toBeUndefined();
    expect(store.size).toBe(0);
    expect(insides(store).shared.size).toBe(0);
    expect(await store.inspectShared('s')).toBeNull();
    expect((await store.tryAcquireShared('s', 'c', 1000, 1, 1, 'keep')).acquired).toBe(true);
    expect((await store.tryAcquire('k', 'c', 1000)).acquired).toBe(true);
    store.close();
    store.close(); // (twice: nothing to stop)
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a shared lock's key is forgotten as soon as nobody holds it or waits for it", async () => {
    const { store } = storeAt();
    await store.tryAcquireShared('s', 'a', 1000, 1, 1, 'keep');
    await store.tryAcquireShared('s', 'b', 1000, 1, 1, 'keep');
    expect(await store.releaseShared('s', 'a')).toBe(true); // (b is granted)
    expect(insides(store).shared.size).toBe(1);
    expect(await store.releaseShared('s', 'b')).toBe(true);
    expect(insides(store).shared.size).toBe(0);
  });
});

describe('recent refusals: a grant says waiting: 1 when another token was refused the key within REFUSED_LATELY_MS', () => {
  /** `holder` takes `key`, `refused` is refused it, the holder gives it back. */
  async function refuse(store: MemoryLockStore, key: string, refused: string, holder = 'holder') {
    expect((await store.tryAcquire(key, holder, 10_000)).acquired).toBe(true);
    expect((await store.tryAcquire(key, refused, 10_000)).acquired).toBe(false);
    expect(await store.release(key, holder)).toBe(true);
  }
  /** `token` takes `key` and gives it back; the grant's `waiting`. */
  async function grant(store: MemoryLockStore, key: string, token: string) {
    const result = await store.tryAcquire(key, token, 10_000);
    if (!result.acquired) throw new Error(`${token} refused ${key}`);
    await store.release(key, token);
    return result.waiting;
  }

  it('within 100 ms of the refusal, for another token; not at 100 ms, not for the refused token itself (late in the clock)', async () => {
    expect(REFUSED_LATELY_MS).toBe(100);
    const { store, time } = storeAt(1_000_000);
    expect(await grant(store, 'k', 'a')).toBeUndefined();
    await refuse(store, 'k', 'b');
    time.now += REFUSED_LATELY_MS - 1;
    expect(await grant(store, 'k', 'c')).toBe(1);
    await refuse(store, 'k', 'b');
    time.now += REFUSED_LATELY_MS;
    expect(await grant(store, 'k', 'c')).toBeUndefined();
    await refuse(store, 'k', 'b');
    expect(await grant(store, 'k', 'b')).toBeUndefined();
  });

  it('the note is forgotten at the grant; a note on another key does not count', async () => {
    const { store } = storeAt(50_000);
    await refuse(store, 'k', 'b');
    expect(await grant(store, 'j', 'c')).toBeUndefined();
    expect(await grant(store, 'k', 'c')).toBe(1);
    expect(await grant(store, 'k', 'd')).toBeUndefined();
    expect(insides(store).refusals.last.size).toBe(0);
  });

  it('notes on several keys are kept side by side', async () => {
    const { store } = storeAt(50_000);
    await refuse(store, 'k', 'b');
    await refuse(store, 'j', 'b');
    await refuse(store, 'k', 'b'); // (a key noted again)
    expect(await grant(store, 'k', 'c')).toBe(1);
    expect(await grant(store, 'j', 'c')).toBe(1);
  });

  it('memory stays bounded: MAX_REFUSALS notes at most; all are dropped when a new key comes, not when a noted key is refused again', async () => {
    const { store } = storeAt(50_000);
    const last = insides(store).refusals.last;
    for (let i = 0; i < MAX_REFUSALS; i++) {
      expect((await store.tryAcquire(`k${i}`, 'holder', 10_000)).acquired).toBe(true);
      expect((await store.tryAcquire(`k${i}`, 'b', 10_000)).acquired).toBe(false);
    }
    expect(last.size).toBe(MAX_REFUSALS);
    expect((await store.tryAcquire('k0', 'c', 10_000)).acquired).toBe(false); // (a noted key, noted again)
    expect(last.size).toBe(MAX_REFUSALS);
    expect((await store.tryAcquire('new', 'holder', 10_000)).acquired).toBe(true);
    expect((await store.tryAcquire('new', 'b', 10_000)).acquired).toBe(false);
    expect(last.size).toBe(1);
    await store.release('k2', 'holder');
    expect(await grant(store, 'k2', 'c')).toBeUndefined(); // (a note lost: one grant that does not say so)
    await store.release('new', 'holder');
    expect(await grant(store, 'new', 'c')).toBe(1);
  });
});
