/**
 * Attack on the turns of a store without a line (9166374): when does a locker yield a key it gave
 * back? The give-back is noted when the store's grant said others were refused the key within
 * 100 ms — or when the locker met any refusal in the last 2 s (ContentionMemory: locker-wide, not
 * per key). That second condition makes the next acquisition of a key that nobody else is after
 * sleep one back-off step (10–30 ms by default) before its first attempt: a loop that takes and
 * gives back a key of its own drops from ~60,000–90,000 acquisitions in 300 ms to 2–17, for 2 s
 * after any refusal — on another key, or on this one long after the other locker went away.
 *
 * In-memory store on a virtual clock: the refusal is real (another locker holds a key), the
 * expected grant is at virtual time 0 (no sleep: nothing else asks for the key).
 */
import { firstValueFrom, type Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type Lease, type Locker } from '../../src/index.js';
import { runVirtual } from '../support/virtualTime.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();

const lockers: Locker[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

function setup() {
  const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  const store = new MemoryLockStore({ clock: () => scheduler.now() });
  const make = () => createLocker({ store, scheduler, keyPrefix: '', longWait: Infinity, retry: { minDelay: 10, jitter: 0 } });
  const locker = make();
  const other = make();
  lockers.push(locker, other);
  /** When `locker` gets `key` (virtual ms from now), running the clock. */
  const grantedAfter = async (key: string): Promise<number | undefined> => {
    let at: number | undefined;
    const started = scheduler.now();
    let lease: Lease | undefined;
    const sub: Subscription = locker.acquire(key, { renew: false }).subscribe((l) => ((lease = l), (at = scheduler.now() - started)));
    await runVirtual(scheduler, () => at !== undefined, 1_000);
    sub.unsubscribe();
    await lease?.release();
    return at;
  };
  return { scheduler, store, locker, other, grantedAfter };
}

describe('a locker that met a refusal lately yields keys nobody else is after', () => {
  it('a refusal on another key: the next acquisition of a key of its own, just given back, sleeps a back-off step', async () => {
    const { locker, other, grantedAfter } = setup();
    // `other` holds 'busy'; `locker` is refused it once (waitTimeout 0).
    await firstValueFrom(other.acquire('busy', { ttl: 2_000_000_000, renew: false }));
    await expect(firstValueFrom(locker.acquire('busy', { waitTimeout: 0 }))).rejects.toThrow();
    // 'mine' is asked for by `locker` alone, one acquisition after the other.
    expect(await grantedAfter('mine')).toBe(0);
    expect(await grantedAfter('mine')).toBe(0); // fails: 10 (the yield's back-off step)
  });

  it('a refusal on this key whose holder and everyone else are gone: later acquisitions alone still sleep', async () => {
    const { scheduler, locker, other, grantedAfter } = setup();
    const held = await firstValueFrom(other.acquire('k', { renew: false }));
    await expect(firstValueFrom(locker.acquire('k', { waitTimeout: 0 }))).rejects.toThrow();
    await held.release();
    await other.close(); // nobody else will ever ask for 'k'
    // Long after (by the store's own measure: its refusal note lasts 100 ms).
    await runVirtual(scheduler, () => false, 0);
    scheduler.schedule(() => undefined, 500);
    await runVirtual(scheduler, () => false, 500);
    expect(await grantedAfter('k')).toBe(0);
    expect(await grantedAfter('k')).toBe(0); // fails: 10
  });
});
