/**
 * Attacks on the hand-written whileHeld / runWhileHeld (b1ad044) and on the store-call deadline
 * FIFO and lease timers (b978800): re-entrant calls from inside the work, its finalize, the
 * subscriber and the deadline handlers.
 */
import {
  config,
  defer,
  delay,
  finalize,
  firstValueFrom,
  lastValueFrom,
  merge,
  NEVER,
  of,
  retry,
  Subject,
  switchMap,
  take,
  throwError,
  type Subscription,
} from 'rxjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CallDeadlines, type Tracked } from '../../src/engine/calls/CallDeadlines.js';
import { LeaseTimers, type DueKind, type Scheduled, type TimerEntry } from '../../src/engine/lease/LeaseTimers.js';
import { createLocker, LockLostError, LockStoreError, MemoryLockStore, type Lease, type LockStore } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `ready` every 5 ms until it holds or `limitMs` passes (generous: the machine is loaded). */
async function until(ready: () => boolean, limitMs = 3_000): Promise<boolean> {
  const start = performance.now();
  while (!ready()) {
    if (performance.now() - start > limitMs) return false;
    await sleep(5);
  }
  return true;
}

function setup(options: Parameters<typeof createLocker>[0] = {}) {
  const memory = new MemoryLockStore();
  let releases = 0;
  const release = memory.release.bind(memory);
  memory.release = (...args) => (releases++, release(...args));
  const locker = createLocker({ store: memory, keyPrefix: '', ...options });
  return { memory, locker, releases: () => releases };
}

/**
 * Errors RxJS reports as unhandled (a throwing finalize, a throwing subscriber callback), collected
 * instead of thrown in a timer. A test that expects some takes them (`unhandled.splice(0)`); any
 * other is a failure, as it is in every other file (where vitest counts it).
 */
const unhandled: unknown[] = [];
config.onUnhandledError = (error) => unhandled.push(error);
afterEach(() => {
  expect(unhandled.splice(0).map(String)).toEqual([]);
});
afterAll(() => {
  config.onUnhandledError = null;
});

// ─── CallDeadlines: re-entrant handlers (b978800) ──────────────────────────────────────────────

function track(deadlines: CallDeadlines, onExpire: () => void): Tracked {
  const call: Tracked = { settled: false, dueAt: 0, next: undefined, expire: onExpire };
  deadlines.track(call);
  return call;
}

describe('CallDeadlines: a handler that tracks or settles calls while calls expire', () => {
  it('a call tracked by the handler of the last call to expire still expires', async () => {
    const deadlines = new CallDeadlines(20);
    let second: Tracked | undefined;
    track(deadlines, () => {
      second = track(deadlines, () => undefined);
    });
    expect(await until(() => second !== undefined)).toBe(true);
    expect(await until(() => second!.settled, 1_000)).toBe(true);
  });

  it('a handler that settles a later call leaves the calls between in the queue', async () => {
    const deadlines = new CallDeadlines(40);
    // biome-ignore lint/style/useConst: assigned after the handler that reads it is made
    let b: Tracked | undefined;
    let c: Tracked | undefined;
    const expired: string[] = [];
    track(deadlines, () => {
      expired.push('a');
      deadlines.settle(c!);
      // a call made by the same handler afterwards
      track(deadlines, () => expired.push('d'));
    });
    await sleep(20); // b and c come due later than a
    b = track(deadlines, () => expired.push('b'));
    c = track(deadlines, () => expired.push('c'));
    expect(await until(() => expired.length === 3, 2_000)).toBe(true);
    expect(expired).toEqual(['a', 'b', 'd']);
    expect(b.settled).toBe(true);
  });
});

describe('the engine: a timed-out acquire whose failure starts the next waiter', () => {
  it("the next waiter's store call is bounded by commandTimeout too", async () => {
    // A store that never answers an acquire.
    const store: LockStore = {
      tryAcquire: () => new Promise(() => undefined),
      release: async () => true,
      extend: async () => 'extended',
    } as unknown as LockStore;
    const locker = createLocker({ store, keyPrefix: '', commandTimeout: 30, waitTimeout: 60_000 });
    const errors: unknown[] = [];
    locker.acquire('k').subscribe({ error: (e: unknown) => errors.push(e) });
    locker.acquire('k').subscribe({ error: (e: unknown) => errors.push(e) });
    // The first times out after 30 ms and fails; the second's session starts from inside that
    // deadline's handler and must time out 30 ms later, not hang.
    expect(await until(() => errors.length === 2, 2_000)).toBe(true);
    expect(errors.every((e) => e instanceof LockStoreError)).toBe(true);
    await locker.close();
  });
});

// ─── whileHeld: the basics under re-entrancy ───────────────────────────────────────────────────

describe('withLock / using under attack', () => {
  it('a source that completes synchronously: one release, complete after it was answered', async () => {
    const { memory, locker, releases } = setup();
    const seen: string[] = [];
    await lastValueFrom(
      of(1, 2).pipe(
        finalize(() => seen.push(`finalize releases=${releases()}`)),
        locker.withLock('k'),
      ),
    ).then(() => seen.push(`done size=${memory.size}`));
    expect(seen).toEqual(['finalize releases=0', 'done size=0']);
    expect(releases()).toBe(1);
    await locker.close();
  });

  it('using: a work function that throws synchronously releases once and errors with its error', async () => {
    const { memory, locker, releases } = setup();
    const boom = new Error('boom');
    await expect(
      lastValueFrom(
        locker.using('k', () => {
          throw boom;
        }),
      ),
    ).rejects.toBe(boom);
    expect(releases()).toBe(1);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('using: a Promise and an array are accepted as work', async () => {
    const { memory, locker, releases } = setup();
    expect(await lastValueFrom(locker.using('k', async () => 7))).toBe(7);
    expect(await lastValueFrom(locker.using('k', () => [1, 2, 3]))).toBe(3);
    expect(releases()).toBe(2);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('take(1) downstream of a synchronous source: one release', async () => {
    const { memory, locker, releases } = setup();
    expect(await firstValueFrom(of(1, 2, 3).pipe(locker.withLock('k'), take(1)))).toBe(1);
    expect(await until(() => releases() === 1)).toBe(true);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('unsubscribed from inside next: one release, the source stopped', async () => {
    const { memory, locker, releases } = setup();
    const source = new Subject<number>();
    const got: number[] = [];
    const subscription: Subscription = source.pipe(locker.withLock('k')).subscribe((v) => {
      got.push(v);
      subscription.unsubscribe();
    });
    expect(await until(() => source.observed)).toBe(true);
    source.next(1);
    source.next(2);
    expect(got).toEqual([1]);
    expect(source.observed).toBe(false);
    expect(await until(() => releases() === 1)).toBe(true);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('nested withLock on two keys: the inner errors, both released once', async () => {
    const { memory, locker, releases } = setup();
    const boom = new Error('boom');
    await expect(lastValueFrom(throwError(() => boom).pipe(locker.withLock('a'), locker.withLock('b')))).rejects.toBe(boom);
    expect(releases()).toBe(2);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('the locker closed from inside the work while it is being subscribed: the work stops, LockLostError, nothing held', async () => {
    const { memory, locker } = setup();
    let workSubscribed = 0;
    let workStopped = 0;
    const result = lastValueFrom(
      defer(() => {
        workSubscribed++;
        void locker.close();
        return NEVER.pipe(finalize(() => workStopped++));
      }).pipe(locker.withLock('k', { onLost: 'notify' })),
    );
    await expect(result).rejects.toBeInstanceOf(LockLostError);
    expect({ workSubscribed, workStopped }).toEqual({ workSubscribed: 1, workStopped: 1 });
    await locker.close();
    expect(memory.size).toBe(0);
  });

  it('lost$ subscribers inside using hear of the loss after the stream errored', async () => {
    const { locker } = setup();
    const order: string[] = [];
    let lease: Lease | undefined;
    locker
      .using('k', (l) => {
        lease = l;
        l.lost$.subscribe(() => order.push('lost$'));
        return NEVER;
      })
      .subscribe({ error: (e: unknown) => order.push(`error ${(e as LockLostError).reason}`) });
    expect(await until(() => lease !== undefined)).toBe(true);
    await locker.close();
    expect(order).toEqual(['error locker-closed', 'lost$']);
  });

  // ─── a finalize inside the work that throws ──────────────────────────────────────────────────

  it("unsubscribed while the work's finalize throws: the lock is still released", async () => {
    const { memory, locker, releases } = setup();
    const source = new Subject<number>();
    const subscription = source
      .pipe(
        finalize(() => {
          throw new Error('finalize failed');
        }),
        locker.withLock('k'),
      )
      .subscribe();
    expect(await until(() => source.observed)).toBe(true);
    expect(() => subscription.unsubscribe()).toThrow(); // RxJS's UnsubscriptionError, as usual
    expect(await until(() => releases() === 1, 1_000)).toBe(true);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('a loss that stops a work whose finalize throws: lost$ still hears, the next waiter still gets the key', async () => {
    const { locker } = setup();
    let lease: Lease | undefined;
    let lostHeard = false;
    const failed = lastValueFrom(
      locker.using(
        'k',
        (l) => {
          lease = l;
          l.lost$.subscribe(() => (lostHeard = true));
          return NEVER.pipe(
            finalize(() => {
              throw new Error('finalize failed');
            }),
          );
        },
        { ttl: 60, renew: false },
      ),
    ).catch((e: unknown) => e);
    expect(await until(() => lease !== undefined)).toBe(true);
    const next = firstValueFrom(locker.acquire('k', { waitTimeout: 60_000 }));
    expect(await failed).toBeInstanceOf(LockLostError);
    expect(await until(() => lostHeard, 1_000)).toBe(true);
    const second = await Promise.race([next, sleep(2_000).then(() => 'stuck' as const)]);
    expect(second).not.toBe('stuck');
    if (second !== 'stuck') await second.release();
    // the finalize's error, reported (asynchronously) as RxJS reports errors nobody can receive
    expect(await until(() => unhandled.length === 1, 1_000)).toBe(true);
    expect(unhandled.splice(0).map(String)).toEqual([expect.stringContaining('Error: finalize failed')]);
    await locker.close();
  });

  it('the work completes and its finalize closes the locker: the stream still completes (the work was done)', async () => {
    const { memory, locker } = setup();
    const result = lastValueFrom(
      of(1).pipe(
        finalize(() => void locker.close()),
        locker.withLock('k'),
      ),
    );
    await expect(result).resolves.toBe(1);
    await locker.close();
    expect(memory.size).toBe(0);
  });
});

describe('the loss path keeps the order of the other paths', () => {
  it('a lost lease: finalize upstream of withLock runs before the release is sent, and the error comes after both', async () => {
    const memory = new MemoryLockStore();
    const order: string[] = [];
    const release = memory.release.bind(memory);
    memory.release = (...args) => (order.push('store.release'), release(...args));
    const locker = createLocker({ store: memory, keyPrefix: '' });
    NEVER.pipe(
      finalize(() => order.push('finalize')),
      locker.withLock('k', { ttl: 60, renew: false }),
    ).subscribe({ error: (e: unknown) => order.push(`error ${(e as LockLostError).reason}`) });
    expect(await until(() => order.length >= 3, 2_000)).toBe(true);
    expect(order).toEqual(['finalize', 'store.release', 'error expired']);
    await locker.close();
  });

  it("using: the lease is not yet released when the work's finalize runs on a loss", async () => {
    const { locker } = setup();
    let releasedInFinalize: boolean | undefined;
    const failed = lastValueFrom(
      locker.using('k', (lease) => NEVER.pipe(finalize(() => (releasedInFinalize = lease.released))), { ttl: 60, renew: false }),
    ).catch((e: unknown) => e);
    expect(await failed).toBeInstanceOf(LockLostError);
    expect(releasedInFinalize).toBe(false);
    await locker.close();
  });
});

describe('re-entrancy from events$, lost$, finalize and the subscriber', () => {
  it('an events$ handler unsubscribes the stream when it hears "acquired": the work is never subscribed, nothing held', async () => {
    const { memory, locker, releases } = setup();
    let subscribed = 0;
    let subscription: Subscription | undefined;
    locker.events$.subscribe((e) => {
      if (e.type === 'acquired') subscription?.unsubscribe();
    });
    subscription = defer(() => (subscribed++, NEVER))
      .pipe(locker.withLock('k'))
      .subscribe();
    expect(await until(() => releases() === 1)).toBe(true);
    expect(subscribed).toBe(0);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('an events$ handler closes the locker when it hears "acquired": onLost notify, the work still never runs, LockLostError', async () => {
    const { memory, locker } = setup();
    let subscribed = 0;
    locker.events$.subscribe((e) => {
      if (e.type === 'acquired') void locker.close();
    });
    const result = lastValueFrom(defer(() => (subscribed++, NEVER)).pipe(locker.withLock('k', { onLost: 'notify' })));
    await expect(result).rejects.toMatchObject({ reason: 'locker-closed' });
    expect(subscribed).toBe(0);
    await locker.close();
    expect(memory.size).toBe(0);
  });

  it('a lost$ subscriber unsubscribes the stream (onLost notify): one release, the work stopped, no error', async () => {
    const { locker, releases } = setup();
    let stopped = 0;
    const errors: unknown[] = [];
    let subscription: Subscription | undefined;
    subscription = locker
      .using(
        'k',
        (lease) => {
          lease.lost$.subscribe(() => subscription?.unsubscribe());
          return NEVER.pipe(finalize(() => stopped++));
        },
        { ttl: 60, renew: false, onLost: 'notify' },
      )
      .subscribe({ error: (e: unknown) => errors.push(e) });
    expect(await until(() => stopped === 1, 2_000)).toBe(true);
    expect(await until(() => releases() === 1)).toBe(true);
    await sleep(20);
    expect({ stopped, errors, releases: releases() }).toEqual({ stopped: 1, errors: [], releases: 1 });
    await locker.close();
  });

  it('onLost notify: the work keeps running after a loss, and close() then does not stop it twice', async () => {
    const { locker } = setup();
    const source = new Subject<number>();
    const got: number[] = [];
    let lost = false;
    const errors: unknown[] = [];
    locker
      .using('k', (l) => (l.lost$.subscribe(() => (lost = true)), source), { ttl: 60, renew: false, onLost: 'notify' })
      .subscribe({ next: (v) => got.push(v), error: (e: unknown) => errors.push(e) });
    expect(await until(() => lost, 2_000)).toBe(true);
    source.next(1);
    expect(got).toEqual([1]);
    expect(errors).toEqual([]);
    source.complete();
    await locker.close();
  });

  it('the locker closed while the release after complete is in flight: the stream completes, one store release', async () => {
    const memory = new MemoryLockStore();
    let releases = 0;
    const release = memory.release.bind(memory);
    memory.release = (...args) => (releases++, sleep(30).then(() => release(...args)));
    const locker = createLocker({ store: memory, keyPrefix: '' });
    const outcome = lastValueFrom(of(1).pipe(locker.withLock('k'))).then(
      (v) => `complete ${v}`,
      (e: unknown) => `error ${String(e)}`,
    );
    expect(await until(() => releases === 1)).toBe(true);
    await locker.close();
    expect(await outcome).toBe('complete 1');
    expect(releases).toBe(1);
    expect(memory.size).toBe(0);
  });

  it('unsubscribed from a finalize upstream while the source completes: one release, nothing held', async () => {
    const { memory, locker, releases } = setup();
    let subscription: Subscription | undefined;
    const source = new Subject<number>();
    subscription = source
      .pipe(
        finalize(() => subscription?.unsubscribe()),
        locker.withLock('k'),
      )
      .subscribe();
    expect(await until(() => source.observed)).toBe(true);
    source.complete();
    expect(await until(() => releases() === 1)).toBe(true);
    await sleep(10);
    expect(releases()).toBe(1);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('throwing subscriber callbacks: reported as RxJS reports them, no unhandled rejection, the lock given back', async () => {
    const { memory, locker, releases } = setup();
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      of(1)
        .pipe(locker.withLock('a'))
        .subscribe({
          next: () => {
            throw new Error('next threw');
          },
          complete: () => {
            throw new Error('complete threw');
          },
        });
      throwError(() => new Error('work failed'))
        .pipe(locker.withLock('b'))
        .subscribe({
          error: () => {
            throw new Error('error threw');
          },
        });
      expect(await until(() => unhandled.length === 3)).toBe(true);
      expect(unhandled.splice(0).map(String).sort()).toEqual(['Error: complete threw', 'Error: error threw', 'Error: next threw']);
      await sleep(20);
      expect(rejections).toEqual([]);
      expect(releases()).toBe(2);
      expect(memory.size).toBe(0);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
    await locker.close();
  });

  it('the source is not subscribed when the acquisition fails', async () => {
    const { locker } = setup();
    const held = await firstValueFrom(locker.acquire('k'));
    let subscribed = 0;
    await expect(lastValueFrom(defer(() => (subscribed++, of(1))).pipe(locker.withLock('k', { waitTimeout: 0 })))).rejects.toMatchObject({
      name: 'LockTimeoutError',
    });
    expect(subscribed).toBe(0);
    await held.release();
    await locker.close();
  });
});

describe('many streams', () => {
  it('64 concurrent streams on 4 keys, a third unsubscribed midway, a third failing: every lock given back, no gate left', async () => {
    const { memory, locker } = setup();
    const subscriptions: Subscription[] = [];
    const ended: Promise<unknown>[] = [];
    for (let i = 0; i < 64; i++) {
      const work = i % 3 === 2 ? throwError(() => new Error(`w${i}`)) : i % 3 === 1 ? NEVER : of(i);
      let settle!: () => void;
      ended.push(new Promise<void>((resolve) => (settle = resolve)));
      const subscription = work.pipe(locker.withLock(`k${i % 4}`)).subscribe({ complete: settle, error: settle });
      if (i % 3 === 1) setTimeout(() => (subscription.unsubscribe(), settle()), 5 + (i % 7));
      subscriptions.push(subscription);
    }
    await Promise.all(ended);
    const engine = locker as unknown as { liveKeys: number };
    expect(await until(() => memory.size === 0 && engine.liveKeys === 0, 5_000)).toBe(true);
    await locker.close();
  });
});

describe('an events$ "lost" handler that ends the stream', () => {
  it('lost$ subscribers still hear of the loss when an events$ handler unsubscribes the stream on "lost"', async () => {
    const { locker } = setup();
    let subscription: Subscription | undefined;
    locker.events$.subscribe((e) => {
      if (e.type === 'lost') subscription?.unsubscribe();
    });
    const heard: string[] = [];
    subscription = locker
      .using(
        'k',
        (lease) => {
          lease.lost$.subscribe({ next: (e) => heard.push(`lost ${e.reason}`), complete: () => heard.push('complete') });
          return NEVER;
        },
        { ttl: 60, renew: false },
      )
      .subscribe();
    expect(await until(() => heard.includes('complete'), 2_000)).toBe(true);
    expect(heard).toEqual(['lost expired', 'complete']);
    await locker.close();
  });
});

describe('resubscription and switching', () => {
  it('retry() downstream resubscribes from inside the loss: each attempt takes the lock anew, nothing left held', async () => {
    const { memory, locker } = setup();
    let subscribed = 0;
    const result = lastValueFrom(defer(() => (subscribed++, NEVER)).pipe(locker.withLock('k', { ttl: 60, renew: false }), retry(2)));
    await expect(result).rejects.toBeInstanceOf(LockLostError);
    expect(subscribed).toBe(3);
    const engine = locker as unknown as { liveKeys: number };
    expect(await until(() => memory.size === 0 && engine.liveKeys === 0)).toBe(true);
    await locker.close();
  });

  it('retry() downstream when the locker closes: the resubscription fails with LockerClosedError', async () => {
    const { memory, locker } = setup();
    let subscribed = 0;
    const result = lastValueFrom(defer(() => (subscribed++, NEVER)).pipe(locker.withLock('k'), retry(1))).catch((e: unknown) => e);
    expect(await until(() => subscribed === 1)).toBe(true);
    await locker.close();
    // (not a lock taken again behind close()'s back, held by a stream that never ends)
    const outcome = await Promise.race([result, sleep(2_000).then(() => 'hangs')]);
    expect(outcome).toMatchObject({ name: 'LockerClosedError' });
    expect(subscribed).toBe(1);
    expect(memory.size).toBe(0);
  });

  it('the same withLock stream subscribed twice at once: the two run one after the other', async () => {
    const { memory, locker, releases } = setup();
    let running = 0;
    let overlap = false;
    const work = defer(() => {
      running++;
      if (running > 1) overlap = true;
      return of(1).pipe(
        delay(10),
        finalize(() => running--),
      );
    }).pipe(locker.withLock('k'));
    expect(await lastValueFrom(merge(work, work), { defaultValue: undefined })).toBe(1);
    expect(overlap).toBe(false);
    expect(releases()).toBeGreaterThanOrEqual(1); // the second may get the lock passed locally
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('switchMap upstream switching while waiting and while holding: the last one completes, nothing left held', async () => {
    const { memory, locker } = setup();
    const triggers = new Subject<number>();
    const values: number[] = [];
    const done = lastValueFrom(triggers.pipe(switchMap((i) => of(i).pipe(delay(5), locker.withLock('k')))));
    for (let i = 0; i < 20; i++) {
      triggers.next(i);
      if (i % 4 === 0) await sleep(3);
    }
    triggers.complete();
    values.push(await done);
    expect(values).toEqual([19]);
    const engine = locker as unknown as { liveKeys: number };
    expect(await until(() => memory.size === 0 && engine.liveKeys === 0)).toBe(true);
    await locker.close();
  });

  it('a loss whose error handler ends another stream and starts a new one (inside the lease timer): all end, nothing left', async () => {
    const { memory, locker } = setup();
    const second = new Subject<number>();
    let secondStopped = false;
    const secondSub = second
      .pipe(
        finalize(() => (secondStopped = true)),
        locker.withLock('b', { ttl: 60, renew: false }),
      )
      .subscribe({ error: () => undefined });
    let third: Promise<unknown> | undefined;
    NEVER.pipe(locker.withLock('a', { ttl: 60, renew: false })).subscribe({
      error: () => {
        secondSub.unsubscribe();
        third = lastValueFrom(of('x').pipe(delay(30), locker.withLock('c', { ttl: 60 })));
      },
    });
    expect(await until(() => third !== undefined, 2_000)).toBe(true);
    expect(await third).toBe('x');
    expect(secondStopped).toBe(true);
    const engine = locker as unknown as { liveKeys: number };
    expect(await until(() => memory.size === 0 && engine.liveKeys === 0)).toBe(true);
    await locker.close();
  });
});

describe('on a real Redis', () => {
  const suite = redisSuite({ unhandled: 'afterEach' });

  it("a lease taken over in Redis: the work stops (finalize) before the owner-checked release, which leaves the new owner's key", async () => {
    const client = connect(suite.server);
    const store = new RedisLockStore(client);
    const locker = createLocker({ store, keyPrefix: 'attack:' });
    suite.closers.push(() => {
      store.close();
      client.disconnect();
    });
    const order: string[] = [];
    const release = store.release.bind(store);
    store.release = (...args: Parameters<RedisLockStore['release']>) => (order.push('store.release'), release(...args));
    let lease: Lease | undefined;
    const failed = lastValueFrom(locker.using('k', (l) => ((lease = l), NEVER.pipe(finalize(() => order.push('finalize')))), { ttl: 300 })).catch(
      (e: unknown) => e,
    );
    expect(await until(() => lease !== undefined)).toBe(true);
    const [key] = (await suite.admin.keys('attack:k*')).filter((k) => (k.match(/:/g) ?? []).length === 1);
    expect(key).toBe('attack:k');
    const type = await suite.admin.type(key!);
    // Another owner takes the key: its token replaces ours, as the store keeps it.
    if (type === 'string') await suite.admin.set(key!, 'intruder', 'PX', 5_000);
    else await suite.admin.hset(key!, 'token', 'intruder');
    const error = await failed;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('taken-over');
    expect(order[0]).toBe('finalize');
    expect(await suite.admin.exists(key!)).toBe(1);
    await locker.close();
  });
});

describe('LeaseTimers: a due lease that reschedules or cancels others (b978800)', () => {
  class Lease1 implements Scheduled {
    timerEntry: TimerEntry | undefined = undefined;
    readonly fired: DueKind[] = [];
    constructor(private readonly onDue: (lease: Lease1) => void = () => undefined) {}
    due(kind: DueKind): void {
      this.fired.push(kind);
      this.onDue(this);
    }
  }

  it('cancelling a lease due in the same firing, rescheduling itself and another: each fires as last scheduled', async () => {
    const timers = new LeaseTimers(() => undefined);
    const now = performance.now();
    const cancelled = new Lease1();
    const moved = new Lease1();
    let rescheduled = false;
    const first = new Lease1((self) => {
      timers.cancel(cancelled);
      timers.schedule(moved, 'deadline', performance.now() + 20);
      if (!rescheduled) {
        rescheduled = true;
        timers.schedule(self, 'renew', performance.now() + 10);
      }
    });
    timers.schedule(first, 'deadline', now + 5);
    timers.schedule(cancelled, 'deadline', now + 6);
    timers.schedule(moved, 'deadline', now + 7);
    expect(await until(() => moved.fired.length > 0 && first.fired.length === 2, 2_000)).toBe(true);
    await sleep(30);
    expect({ first: first.fired, cancelled: cancelled.fired, moved: moved.fired.length }).toEqual({
      first: ['deadline', 'renew'],
      cancelled: [],
      moved: 1, // rescheduled by each of first's two firings: only the last entry is live
    });
    expect([first, cancelled, moved].every((l) => l.timerEntry === undefined)).toBe(true);
    timers.stop();
  });
});

describe('using: the work handles the lease itself', () => {
  it('the work releases the lease synchronously and completes: one store release, complete after it', async () => {
    const { memory, locker, releases } = setup();
    expect(await lastValueFrom(locker.using('k', (lease) => (void lease.release(), of(1))))).toBe(1);
    expect(releases()).toBe(1);
    expect(memory.size).toBe(0);
    await locker.close();
  });

  it('a lost$ subscriber releases the lease on the loss (onLost error): one release, LockLostError', async () => {
    const { locker, releases } = setup();
    const failed = lastValueFrom(locker.using('k', (lease) => (lease.lost$.subscribe(() => void lease.release()), NEVER), { ttl: 60, renew: false })).catch(
      (e: unknown) => e,
    );
    expect(await failed).toBeInstanceOf(LockLostError);
    await sleep(10);
    expect(releases()).toBe(1);
    await locker.close();
  });
});
