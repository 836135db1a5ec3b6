/**
 * Multi-key locks (`withLocks`, `usingLocks`, `acquireLocks`) on a store, run against each backend
 * (see *.multikey.test.ts): they are built over the engine's one-key path, so every store the
 * engine runs on must give the same behaviour. Times are real; what the store holds is read from
 * the store itself, never from the locker.
 */
import { firstValueFrom, lastValueFrom, NEVER, Observable, of } from 'rxjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, isLockTimeoutError, type AcquiredEvent, type Locker, type LockerOptions, type LockStore } from '../../src/index.js';
import { inspectorOf, queueingOf } from '../../src/store/capabilities.js';
import { holdUntilReleased } from '../support/holding.js';
import { eventually } from '../support/timing.js';

export interface MultiKeyStoreUnderTest {
  readonly store: LockStore;
  /** The token the store holds for `storeKey` now, or null when the key is free. */
  holderOf(storeKey: string): Promise<string | null>;
  close(): Promise<void>;
}

export interface MultiKeyContractOptions {
  /** Factor for TTLs and waits (a quorum store's every call is several round trips). */
  readonly timeScale?: number;
  /** Run the many-stream contention case (skipped where another file covers it). */
  readonly contention?: boolean;
}

let n = 0;

export function multiKeyContract(
  name: string,
  open: () => Promise<MultiKeyStoreUnderTest>,
  { timeScale = 1, contention = true }: MultiKeyContractOptions = {},
): void {
  const ms = (value: number) => value * timeScale;
  describe(`multi-key locks: ${name}`, () => {
    let sut: MultiKeyStoreUnderTest;
    const lockers: Locker[] = [];
    beforeAll(async () => {
      sut = await open();
      return () => sut.close();
    });
    afterEach(async () => {
      await Promise.all(lockers.splice(0).map((locker) => locker.close()));
    });

    const lockerWith = (options: LockerOptions = {}): Locker => {
      const locker = createLocker({ store: sut.store, ...options });
      lockers.push(locker);
      return locker;
    };
    /** Fresh locker keys `<stem>:<n>:<name>` (sorted as their names are). */
    const keysNamed = (stem: string, ...names: string[]) => {
      const run = ++n;
      return names.map((name) => `mk:${stem}:${run}:${name}`);
    };
    const holder = (key: string) => sut.holderOf(`lock:${key}`);
    const holders = (keys: readonly string[]) => Promise.all(keys.map(holder));
    /** Waiters in the store's line for `key`, when the store has a line and says; else undefined. */
    const waitingFor = async (key: string): Promise<number | undefined> => {
      const inspector = queueingOf(sut.store) === undefined ? undefined : inspectorOf(sut.store);
      return (await inspector?.inspect(`lock:${key}`))?.waiting;
    };

    it('takes every key once, in lock order, holds them all while the work runs and gives them all back', async () => {
      const [a, b, c] = keysNamed('all', 'a', 'b', 'c') as [string, string, string];
      const locker = lockerWith();
      const acquired: string[] = [];
      locker.events$.subscribe((e) => e.type === 'acquired' && acquired.push((e as AcquiredEvent).key));
      const seen = await lastValueFrom(
        locker.usingLocks([c, a, b, c, a], async (locks) => ({
          keys: locks.keys,
          fences: [...locks.fences.keys()],
          tokens: [a, b, c].map((key) => locks.leases.get(key)!.token),
          inStore: await holders([a, b, c]),
          held: locks.held,
        })),
      );
      expect(seen.keys).toEqual([a, b, c]);
      expect(seen.fences).toEqual([a, b, c]);
      expect(seen.inStore).toEqual(seen.tokens);
      expect(seen.held).toBe(true);
      expect(acquired).toEqual([a, b, c]);
      // complete is passed on once every release was answered
      expect(await holders([a, b, c])).toEqual([null, null, null]);
    });

    it('all or none: a key held elsewhere times the set out, the keys taken are given back, the work never runs', async () => {
      const [a, b, c] = keysNamed('none', 'a', 'b', 'c') as [string, string, string];
      const other = holdUntilReleased(lockerWith(), b);
      const otherLease = await other.lease;
      let ran = false;
      const work = new Observable<never>(() => void (ran = true));
      const error = await lastValueFrom(work.pipe(lockerWith({ waitTimeout: ms(300) }).withLocks([a, b, c]))).catch((e: unknown) => e);
      expect(isLockTimeoutError(error) && error.key).toBe(b);
      expect(ran).toBe(false);
      await eventually(async () => (await holder(a)) === null, 3_000);
      expect(await holders([b, c])).toEqual([otherLease.token, null]);
      other.release();
      await other.ended;
    });

    it('unsubscribing mid-acquisition gives back every key taken and leaves the line of the key waited for', async () => {
      const [a, b, c] = keysNamed('cancel', 'a', 'b', 'c') as [string, string, string];
      const other = holdUntilReleased(lockerWith(), c);
      const otherLease = await other.lease;
      let ran = false;
      const subscription = new Observable<never>(() => void (ran = true))
        .pipe(lockerWith({ waitTimeout: 30_000 }).withLocks([b, c, a]))
        .subscribe({ error: () => undefined });
      await eventually(async () => (await holder(a)) !== null && (await holder(b)) !== null, 5_000);
      if ((await waitingFor(c)) !== undefined) await eventually(async () => (await waitingFor(c))! >= 1, 5_000);
      subscription.unsubscribe();
      await eventually(async () => (await holder(a)) === null && (await holder(b)) === null, 3_000);
      expect(await holder(c)).toBe(otherLease.token);
      if ((await waitingFor(c)) !== undefined) await eventually(async () => (await waitingFor(c)) === 0, 3_000);
      // the holder lets go: nobody of ours takes the key (a grant to the cancelled set would be given back)
      other.release();
      await other.ended;
      await eventually(async () => (await holder(c)) === null, 3_000);
      expect(ran).toBe(false);
    });

    it('a lease of the set lost while the work runs errors the stream with its LockLostError and gives back the others', async () => {
      const [a, b] = keysNamed('lost', 'a', 'b') as [string, string];
      const locker = lockerWith({ ttl: ms(600), renew: { interval: ms(100) } });
      let tokenOfB: string | undefined;
      const ended = lastValueFrom(
        locker.usingLocks([a, b], (locks) => {
          tokenOfB = locks.leases.get(b)!.token;
          return NEVER;
        }),
      ).catch((e: unknown) => e);
      await eventually(() => tokenOfB !== undefined, 5_000);
      // the key is deleted behind the holder's back: its next renewal finds it gone
      expect(await sut.store.release(`lock:${b}`, tokenOfB!)).toBe(true);
      const error = await ended;
      expect(isLockLostError(error) && error.key).toBe(b);
      await eventually(async () => (await holder(a)) === null, 3_000);
    });

    it('a key lost while a later one is waited for ends the wait with its LockLostError and leaves the line', async () => {
      const [a, b] = keysNamed('lostwaiting', 'a', 'b') as [string, string];
      const other = holdUntilReleased(lockerWith(), b);
      await other.lease;
      const locker = lockerWith({ ttl: ms(600), renew: { interval: ms(100) }, waitTimeout: 30_000 });
      const ended = lastValueFrom(of(1).pipe(locker.withLocks([a, b]))).catch((e: unknown) => e);
      await eventually(async () => (await holder(a)) !== null, 5_000);
      expect(await sut.store.release(`lock:${a}`, (await holder(a))!)).toBe(true);
      const error = await ended;
      expect(isLockLostError(error) && error.key).toBe(a);
      if ((await waitingFor(b)) !== undefined) await eventually(async () => (await waitingFor(b)) === 0, 3_000);
      other.release();
      await other.ended;
      await eventually(async () => (await holder(b)) === null, 3_000);
    });

    it("acquireLocks emits the set: each key's lease and fence; release gives every key back once; extend extends all", async () => {
      const [a, b] = keysNamed('acquire', 'a', 'b') as [string, string];
      const locks = await firstValueFrom(lockerWith().acquireLocks([b, a]));
      expect(locks.keys).toEqual([a, b]);
      expect(locks.fences.get(a)).toBe(locks.leases.get(a)!.fence);
      expect(locks.held).toBe(true);
      expect(locks.validUntil).toBe(Math.min(locks.leases.get(a)!.validUntil, locks.leases.get(b)!.validUntil));
      expect(await locks.extend(ms(20_000))).toBe(true);
      expect(locks.leases.get(b)!.ttl).toBe(ms(20_000));
      const released = locks.release();
      expect(locks.release()).toBe(released);
      expect(await released).toBe(true);
      expect(locks.held).toBe(false);
      expect(await holders([a, b])).toEqual([null, null]);
      expect(await locks.extend()).toBe(false);
    });

    it("onBusy: 'skip' completes empty when a key is held, holding nothing", async () => {
      const [a, b] = keysNamed('skip', 'a', 'b') as [string, string];
      const other = holdUntilReleased(lockerWith(), b);
      await other.lease;
      const values = await lastValueFrom(of('ran').pipe(lockerWith().withLocks([a, b], { onBusy: 'skip' })), { defaultValue: 'skipped' });
      expect(values).toBe('skipped');
      const used = await lastValueFrom(
        lockerWith().usingLocks([a, b], () => of('ran'), { onBusy: 'skip' }),
        { defaultValue: 'skipped' },
      );
      expect(used).toBe('skipped');
      await eventually(async () => (await holder(a)) === null, 3_000);
      other.release();
      await other.ended;
    });

    if (contention) {
      it('overlapping random sets from many streams of two lockers: no deadlock, no time-out, one holder per key at a time', async () => {
        const pool = keysNamed('overlap', 'a', 'b', 'c', 'd', 'e');
        // two lockers: two sets of local gates, meeting in the store as two processes would
        const pair = [lockerWith({ waitTimeout: 10_000 }), lockerWith({ waitTimeout: 10_000 })];
        const inside = new Map<string, number>();
        let most = 0;
        let seed = 7;
        const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
        const section = (keys: readonly string[]) =>
          new Observable<void>((subscriber) => {
            for (const key of keys) {
              const now = (inside.get(key) ?? 0) + 1;
              inside.set(key, now);
              most = Math.max(most, now);
            }
            const timer = setTimeout(() => subscriber.complete(), 1 + Math.floor(random() * 3));
            return () => {
              clearTimeout(timer);
              for (const key of keys) inside.set(key, inside.get(key)! - 1);
            };
          });
        const loop = async (locker: Locker) => {
          for (let i = 0; i < 8; i++) {
            const keys = pool.filter(() => random() < 0.5);
            if (keys.length === 0) keys.push(pool[i % pool.length]!);
            // the caller's order is random; the locker's is not
            keys.sort(() => random() - 0.5);
            await lastValueFrom(section(keys).pipe(locker.withLocks(keys)), { defaultValue: undefined });
          }
        };
        const outcomes = await Promise.allSettled(pair.flatMap((locker) => [loop(locker), loop(locker), loop(locker)]));
        expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
        expect(most).toBe(1);
        expect(await holders(pool)).toEqual(pool.map(() => null));
      });
    }
  });
}
