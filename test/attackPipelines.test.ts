/** Adversarial tests of exclusivePerKey and onBusy 'skip' on the in-memory store. */
import { firstValueFrom, Observable, of, Subject, toArray, lastValueFrom } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { createLocker, exclusivePerKey, isLockLostError, isLockOptionsError, MemoryLockStore, withLock } from '../src/index.js';
import { RedisLockStore } from '../src/redis.js';
import { connect } from './support/redis.js';
import { redisSuite } from './support/redisSuite.js';

const locker = () => createLocker({ store: new MemoryLockStore() });

/** A synchronous source that would run forever unless its subscriber closes (stops at `cap`). */
const syncFlood = (cap: number, emitted: { count: number }) =>
  new Observable<number>((s) => {
    for (let i = 0; i < cap && !s.closed; i++) {
      emitted.count++;
      s.next(i);
    }
    s.complete();
  });

describe('the in-memory default warning', () => {
  it('exclusivePerKey and withLock without a locker warn once, with the code, on first use', async () => {
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      await lastValueFrom(
        of(1, 2).pipe(
          exclusivePerKey(String, async (n) => n),
          toArray(),
        ),
      );
      await lastValueFrom(of(1).pipe(withLock('w')));
      await lastValueFrom(of(1).pipe(exclusivePerKey(String, async (n) => n)));
      const ours = spy.mock.calls.filter((c) => JSON.stringify(c[1] ?? {}).includes('RXJS_LOCK_IN_MEMORY_DEFAULT'));
      expect(ours).toHaveLength(1);
      expect(String(ours[0]![0])).toMatch(/in-memory/);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('exclusivePerKey under attack', () => {
  it('a throw in keyOf on a synchronous source stops the source at once (as mergeMap does)', async () => {
    const l = locker();
    const emitted = { count: 0 };
    let calls = 0;
    const error = await lastValueFrom(
      syncFlood(10_000, emitted).pipe(
        exclusivePerKey(
          (n) => {
            calls++;
            if (n === 0) throw new Error('bad key');
            return `k:${n}`;
          },
          async (n) => n,
          { locker: l },
        ),
      ),
    ).catch((e: unknown) => e as Error);
    expect((error as Error).message).toBe('bad key');
    expect(calls).toBe(1);
    expect(emitted.count).toBe(1);
    await l.close();
  });

  it('an invalid key on a synchronous source stops the source and errors with LockOptionsError', async () => {
    const l = locker();
    const emitted = { count: 0 };
    const error = await lastValueFrom(
      syncFlood(10_000, emitted).pipe(
        exclusivePerKey(
          () => '',
          async (n) => n,
          { locker: l },
        ),
      ),
    ).catch((e: unknown) => e);
    expect(isLockOptionsError(error)).toBe(true);
    expect(emitted.count).toBe(1);
    await l.close();
  });

  it('rejects bad concurrency values', () => {
    for (const c of [0, -1, 1.5, Number.NaN, -Infinity, '2', null]) {
      expect(() => exclusivePerKey(String, async () => 1, { concurrency: c as never })).toThrow(/concurrency/);
    }
    expect(() => exclusivePerKey(null as never, async () => 1)).toThrow(/keyOf/);
  });

  it('a huge synchronous burst of one key interleaved with others keeps per-key order, concurrency 1 and Infinity', async () => {
    for (const concurrency of [1, 3, Infinity]) {
      const l = locker();
      const messages = Array.from({ length: 600 }, (_, i) => ({ key: ['a', 'b', '__proto__', 'constructor'][i % 4]!, i }));
      let active = 0;
      let maxActive = 0;
      const perKeyActive = new Map<string, number>();
      const out = await lastValueFrom(
        of(...messages).pipe(
          exclusivePerKey(
            (m) => m.key,
            async (m) => {
              active++;
              maxActive = Math.max(maxActive, active);
              perKeyActive.set(m.key, (perKeyActive.get(m.key) ?? 0) + 1);
              expect(perKeyActive.get(m.key)).toBe(1);
              await Promise.resolve();
              perKeyActive.set(m.key, perKeyActive.get(m.key)! - 1);
              active--;
              return m;
            },
            { locker: l, concurrency },
          ),
          toArray(),
        ),
      );
      expect(out).toHaveLength(600);
      for (const key of ['a', 'b', '__proto__', 'constructor']) {
        const order = out.filter((m) => m.key === key).map((m) => m.i);
        expect(order).toEqual([...order].sort((x, y) => x - y));
      }
      expect(maxActive).toBeLessThanOrEqual(Math.min(concurrency, 4));
      await l.close();
    }
  });

  it('an error while other keys hold locks gives every lock back and drops queued messages', async () => {
    const l = locker();
    const source = new Subject<string>();
    const started: string[] = [];
    const done = lastValueFrom(
      source.pipe(
        exclusivePerKey(
          (m) => m.split('#')[0]!,
          (m) =>
            new Observable<string>(() => {
              started.push(m);
              if (m === 'boom#1') throw new Error('boom');
            }),
          { locker: l },
        ),
      ),
    ).catch((e: unknown) => e as Error);
    source.next('a#1');
    source.next('a#2');
    source.next('b#1');
    await waitFor(() => started.length === 2);
    source.next('boom#1');
    expect(((await done) as Error).message).toBe('boom');
    expect(started).toEqual(['a#1', 'b#1', 'boom#1']);
    // every lock came back: skip-mode acquisitions get them at once
    for (const key of ['a', 'b', 'boom']) {
      const got = await firstValueFrom(l.using(key, () => of(key), { onBusy: 'skip' }).pipe(toArray()));
      expect(got).toEqual([key]);
    }
    await l.close();
  });

  it('a source error while keys hold locks errors the result, aborts their work and frees the locks', async () => {
    const l = locker();
    const source = new Subject<string>();
    const signals: AbortSignal[] = [];
    const done = lastValueFrom(
      source.pipe(
        exclusivePerKey(
          (m) => m,
          (_m, _lease, signal) => (signals.push(signal), new Promise<never>(() => undefined)),
          { locker: l, concurrency: 2 },
        ),
      ),
    ).catch((e: unknown) => e);
    source.next('x');
    source.next('y');
    source.next('z'); // waits for a slot
    await waitFor(() => signals.length === 2);
    source.error(new Error('source broke'));
    expect(((await done) as Error).message).toBe('source broke');
    expect(signals.every((s) => s.aborted)).toBe(true);
    for (const key of ['x', 'y', 'z']) {
      expect(await lastValueFrom(l.using(key, () => of(key), { onBusy: 'skip' }).pipe(toArray()))).toEqual([key]);
    }
    await l.close();
  });

  it('a throw inside project (synchronous) errors the stream like mergeMap and frees the lock', async () => {
    const l = locker();
    const error = await lastValueFrom(
      of('p', 'q').pipe(
        exclusivePerKey(
          (m) => m,
          (m) => {
            if (m === 'p') throw new Error('project threw');
            return of(m);
          },
          { locker: l },
        ),
      ),
    ).catch((e: unknown) => e);
    expect((error as Error).message).toBe('project threw');
    for (const key of ['p', 'q']) {
      await waitFor(async () => (await lastValueFrom(l.using(key, () => of(key), { onBusy: 'skip' }).pipe(toArray()))).length === 1);
    }
    await l.close();
  });

  it('unsubscribing inside project ends the whole stream and releases', async () => {
    const l = locker();
    const seen: number[] = [];
    const subscription = of(1, 2, 3)
      .pipe(
        exclusivePerKey(
          () => 'k',
          async (n) => {
            seen.push(n);
            subscription.unsubscribe();
            return n;
          },
          { locker: l },
        ),
      )
      .subscribe();
    await waitFor(() => seen.length === 1);
    await waitFor(async () => (await firstValueFrom(l.using('k', () => of(1), { onBusy: 'skip' }).pipe(toArray()))).length === 1);
    expect(seen).toEqual([1]);
    await l.close();
  });
});

describe("onBusy: 'skip' under attack", () => {
  it('completes empty while held and runs once released; never queues', async () => {
    const l = locker();
    const release = new Subject<void>();
    const holder = l.using('s', () => release).subscribe();
    await waitFor(async () => (await firstValueFrom(l.using('s', () => of(1), { onBusy: 'skip' }).pipe(toArray()))).length === 0);
    release.complete();
    holder.unsubscribe();
    await waitFor(async () => (await firstValueFrom(l.using('s', () => of(1), { onBusy: 'skip' }).pipe(toArray()))).length === 1);
    await l.close();
  });
});

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('reentrancy with synchronous work', () => {
  it('20,000 messages of one key whose work completes synchronously: no stack overflow, all in order', async () => {
    const l = locker();
    const n = 20_000;
    const out = await lastValueFrom(
      new Observable<number>((s) => {
        for (let i = 0; i < n; i++) s.next(i);
        s.complete();
      }).pipe(
        exclusivePerKey(
          () => 'hot',
          (i) => of(i),
          { locker: l, concurrency: 1 },
        ),
        toArray(),
      ),
    );
    expect(out).toEqual(Array.from({ length: n }, (_, i) => i));
    await l.close();
  }, 60_000);

  it("using's signal aborts when the subscriber leaves, and the lock comes back", async () => {
    const l = locker();
    let seen: AbortSignal | undefined;
    const sub = l
      .using('sig', (_lease, signal) => {
        seen = signal;
        return new Promise<never>(() => undefined);
      })
      .subscribe();
    await waitFor(() => seen !== undefined);
    expect(seen!.aborted).toBe(false);
    sub.unsubscribe();
    expect(seen!.aborted).toBe(true);
    await waitFor(async () => (await firstValueFrom(l.using('sig', () => of(1), { onBusy: 'skip' }).pipe(toArray()))).length === 1);
    await l.close();
  });

  it('closing the locker mid-stream ends exclusivePerKey (error or completion), never hangs', async () => {
    const l = locker();
    const source = new Subject<number>();
    let started = 0;
    const done = lastValueFrom(
      source.pipe(
        exclusivePerKey(
          (n) => `k${n % 2}`,
          () => {
            started++;
            return new Observable<number>(() => undefined);
          },
          { locker: l },
        ),
        toArray(),
      ),
    ).then(
      () => 'completed',
      (e: unknown) => e,
    );
    source.next(1);
    source.next(2);
    source.next(3);
    await waitFor(() => started === 2);
    await l.close();
    const ending = await done;
    expect(ending).not.toBeUndefined();
  });
});

describe("onBusy: 'skip' with a waiter in the Redis store's line", () => {
  const suite = redisSuite();
  function instance() {
    const redis = connect(suite.server);
    const store = new RedisLockStore(redis);
    const l = createLocker({ store });
    suite.closers.push(async () => {
      await l.close();
      store.close();
      await redis.quit();
    });
    return l;
  }

  it('a skip neither jumps the line nor leaves a place in it; the waiter gets the lock on release', async () => {
    const [a, b, c] = [instance(), instance(), instance()];
    const releaseA = new Subject<void>();
    let aHolds = false;
    const holder = a.using('line-key', () => ((aHolds = true), releaseA)).subscribe();
    await waitFor(() => aHolds);
    let bRan = false;
    const waiter = lastValueFrom(b.using('line-key', async () => ((bRan = true), 'b'), { waitTimeout: 20_000 }).pipe(toArray()));
    await waitFor(async () => (await suite.admin.keys('rxjs-lock:line:*')).length > 0);
    const lineBefore = await dumpLine(suite.admin);
    for (let i = 0; i < 5; i++) {
      expect(await lastValueFrom(c.using('line-key', async () => 'c', { onBusy: 'skip' }).pipe(toArray()))).toEqual([]);
    }
    expect(await dumpLine(suite.admin)).toEqual(lineBefore);
    releaseA.complete();
    holder.unsubscribe();
    expect(await waiter).toEqual(['b']);
    expect(bRan).toBe(true);
    await waitFor(async () => (await suite.admin.keys('rxjs-lock:line:*')).length === 0);
  });

  it('a lease lost inside exclusivePerKey errors the stream with LockLostError and aborts the signal with it', async () => {
    const l = instance();
    let signal: AbortSignal | undefined;
    let other: AbortSignal | undefined;
    const source = new Subject<string>();
    const done = lastValueFrom(
      source.pipe(
        exclusivePerKey(
          (m) => m,
          (m, _lease, s) => {
            if (m === 'lost-key') signal = s;
            else other = s;
            return new Observable<string>(() => undefined);
          },
          { locker: l, ttl: 600 },
        ),
      ),
    ).catch((e: unknown) => e);
    source.next('lost-key');
    source.next('other-key');
    await waitFor(() => signal !== undefined && other !== undefined);
    const keys = await suite.admin.keys('*lost-key*');
    const lockKeys = keys.filter((k) => !k.includes('line') && !k.includes('places'));
    expect(lockKeys.length).toBeGreaterThan(0);
    await suite.admin.del(...lockKeys);
    const error = await done;
    expect(isLockLostError(error)).toBe(true);
    expect(signal!.aborted).toBe(true);
    expect(signal!.reason).toBe(error);
    expect(other!.aborted).toBe(true); // the other key's work is told to stop too
    expect((other!.reason as Error).name).toBe('AbortError');
    await waitFor(async () => (await suite.admin.keys('*other-key*')).length === 0);
  }, 20_000);

  it('skips fired at the moment of a release with a waiter in line never overlap the holder or the waiter, and leave no trace', async () => {
    const [a, b, c] = [instance(), instance(), instance()];
    let active = 0;
    let maxActive = 0;
    const section = async (v: string) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 1));
      active--;
      return v;
    };
    let cRan = 0;
    for (let round = 0; round < 15; round++) {
      const releaseA = new Subject<void>();
      let aHolds = false;
      const holder = a
        .using('race', () => ((aHolds = true), active++, (maxActive = Math.max(maxActive, active)), releaseA))
        .subscribe({ complete: () => undefined });
      await waitFor(() => aHolds);
      const waiter = lastValueFrom(b.using('race', () => section('b'), { waitTimeout: 20_000 }).pipe(toArray()));
      await waitFor(async () => (await suite.admin.keys('rxjs-lock:line:*')).length > 0);
      active--;
      releaseA.complete();
      const skips = Array.from({ length: 3 }, () => lastValueFrom(c.using('race', () => section('c'), { onBusy: 'skip' }).pipe(toArray())));
      holder.unsubscribe();
      const [bGot, ...skipped] = await Promise.all([waiter, ...skips]);
      expect(bGot).toEqual(['b']);
      for (const got of skipped) expect(got.length).toBeLessThanOrEqual(1);
      cRan += skipped.filter((g) => g.length === 1).length;
      await waitFor(async () => (await suite.admin.keys('rxjs-lock:*')).length === 0 && (await suite.admin.keys('lock:*')).length === 0);
    }
    // cRan is usually 0 (a skip does not jump the waiter), but a skip that reaches the store after
    // B finished may run legitimately: not asserted.
    void cRan;
    expect(maxActive).toBe(1);
  }, 60_000);

  it('exclusivePerKey on two instances over Redis: one key never runs twice at once', async () => {
    const [a, b] = [instance(), instance()];
    let active = 0;
    let maxActive = 0;
    const work = async (m: number) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 2));
      active--;
      return m;
    };
    const messages = Array.from({ length: 40 }, (_, i) => i);
    const results = await Promise.all(
      [a, b].map((l) =>
        lastValueFrom(
          of(...messages).pipe(
            exclusivePerKey(() => 'shared', work, { locker: l, concurrency: 4, waitTimeout: 30_000 }),
            toArray(),
          ),
        ),
      ),
    );
    expect(results.flat()).toHaveLength(80);
    expect(maxActive).toBe(1);
  }, 60_000);
});

async function dumpLine(admin: import('ioredis').Redis): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of [...(await admin.keys('rxjs-lock:line:*')), ...(await admin.keys('rxjs-lock:places:*'))].sort()) {
    const type = await admin.type(key);
    out[key] =
      type === 'zset'
        ? await admin.zrange(key, '0', '-1')
        : type === 'list'
          ? await admin.lrange(key, '0', '-1')
          : type === 'hash'
            ? await admin.hgetall(key)
            : type;
  }
  return out;
}
