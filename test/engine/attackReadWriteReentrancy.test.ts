/**
 * Attacks on reentrant read-write locks (commit 4a22970): a read or write lock subscribed inside
 * the work of a read-write lock of the same key and locker joins it; a write inside a read fails
 * with LockUpgradeError. Each test tries to let another locker's writer (or reader) in while a
 * joined hold still runs, to give the store lease back twice or early, to make the upgrade check
 * misfire, or to leave a stream hanging / a rejection unhandled.
 */
import { catchError, defer, EMPTY, firstValueFrom, lastValueFrom, map, mergeMap, Observable, of, tap, throwError, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, isLockTimeoutError, isLockUpgradeError, type Lease, type Locker, MemoryLockStore } from '../../src/index.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';
import { prng } from './attackFuzz.js';

expectNoUnhandledRejections();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Ctx {
  store: MemoryLockStore;
  locker: Locker;
  other: Locker;
  calls: { acquire: number; release: number };
  holders: (key: string) => Promise<number>;
}

/** A reentrant locker and an independent (other process) locker on one in-memory store. */
async function withLockers(test: (ctx: Ctx) => Promise<void>, lockerOptions: { keyPrefix?: string; ttl?: number } = {}): Promise<void> {
  const store = new MemoryLockStore();
  const calls = { acquire: 0, release: 0 };
  // `locker`'s shared grants and releases are counted, not `other`'s (same store underneath)
  const counted = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...a: unknown[]) => unknown;
      if (property === 'tryAcquireShared' || property === 'releaseShared')
        return (...args: unknown[]) => {
          if (property === 'tryAcquireShared') calls.acquire++;
          else calls.release++;
          return fn.apply(target, args);
        };
      return fn.bind(target);
    },
  });
  const locker = createLocker({ store: counted, keyPrefix: lockerOptions.keyPrefix ?? '', reentrant: true, ttl: lockerOptions.ttl ?? 5_000 });
  const other = createLocker({ store, keyPrefix: '', ttl: 5_000 });
  try {
    await test({
      store,
      locker,
      other,
      calls,
      holders: async (key) => (await store.inspectShared(key))?.holders.length ?? 0,
    });
  } finally {
    await locker.close();
    await other.close();
  }
}

/** `other`'s write lock on `key`, noting when it is in. */
function otherWriter(other: Locker, key: string, log: string[], waitTimeout = 3_000): Promise<unknown> {
  const p = lastValueFrom(
    defer(() => {
      log.push('other writer in');
      return of('w');
    }).pipe(other.withWriteLock(key, { waitTimeout })),
  ).catch((e: unknown) => e);
  return p;
}

describe('attack: a joined hold that outlives the outer work', () => {
  it('outer write ends while a detached joined read still runs: another locker’s writer waits for the detached read', async () => {
    await withLockers(async ({ locker, other, calls, holders }) => {
      const log: string[] = [];
      const outer = lastValueFrom(
        locker.usingWriteLock('k', () => {
          // subscribed inside the work, not part of its stream: outlives it
          locker
            .usingReadLock('k', () => timer(300).pipe(tap(() => log.push('detached read ends'))), { waitTimeout: 0 })
            .subscribe({ error: (e: unknown) => log.push(`detached error ${String(e)}`) });
          return of('outer work done');
        }),
      ).then((v) => (log.push('outer stream completes'), v));
      await sleep(30);
      expect(await holders('k')).toBe(1);
      const writer = otherWriter(other, 'k', log);
      expect(await writer).toBe('w');
      await outer;
      expect(log).toEqual(['detached read ends', 'outer stream completes', 'other writer in']);
      expect(calls.release).toBe(1);
    });
  });

  it('outer write unsubscribed while a detached joined write still runs: the store lease stays until the detached write ends', async () => {
    await withLockers(async ({ locker, other, calls }) => {
      const log: string[] = [];
      const sub = locker
        .usingWriteLock('k', () => {
          locker.usingWriteLock('k', () => timer(200).pipe(tap(() => log.push('detached write ends'))), { waitTimeout: 0 }).subscribe();
          return timer(10_000);
        })
        .subscribe();
      await sleep(30);
      sub.unsubscribe();
      expect(await otherWriter(other, 'k', log)).toBe('w');
      expect(log).toEqual(['detached write ends', 'other writer in']);
      expect(calls).toEqual({ acquire: 1, release: 1 });
    });
  });

  it('a joined read that errors or is unsubscribed gives nothing back: the outer write still excludes the other locker', async () => {
    await withLockers(async ({ locker, other, calls, holders }) => {
      const log: string[] = [];
      let writer: Promise<unknown> | undefined;
      await lastValueFrom(
        locker.usingWriteLock('k', async () => {
          const failed = await lastValueFrom(
            locker.usingReadLock('k', () => throwError(() => new Error('boom')), { waitTimeout: 0 }).pipe(catchError((e: unknown) => of(e))),
          );
          expect((failed as Error).message).toBe('boom');
          const sub = locker.usingReadLock('k', () => timer(10_000), { waitTimeout: 0 }).subscribe();
          sub.unsubscribe();
          writer = otherWriter(other, 'k', log);
          await sleep(150);
          expect(await holders('k')).toBe(1);
          log.push('outer work ends');
        }),
      );
      expect(await writer).toBe('w');
      expect(log).toEqual(['outer work ends', 'other writer in']);
      expect(calls.release).toBe(1);
    });
  });
});

describe('attack: a joined acquire() lease', () => {
  it('released twice, and once after the outer ended: one store release, at the end; the other writer waits for it', async () => {
    await withLockers(async ({ locker, other, calls, holders }) => {
      const log: string[] = [];
      let joined: Lease | undefined;
      const outer = lastValueFrom(
        locker.usingWriteLock('k', async (write) => {
          joined = await firstValueFrom(locker.acquireReadLock('k', { waitTimeout: 0 }));
          expect(joined.token).toBe(write.token);
          return 'outer';
        }),
      ).then((v) => (log.push('outer completes'), v));
      await sleep(50);
      expect(await holders('k')).toBe(1); // the outer waits for the joined lease
      const writer = otherWriter(other, 'k', log);
      await sleep(100);
      expect(log).toEqual([]);
      expect(joined!.held).toBe(true);
      log.push('joined release');
      const [a, b] = await Promise.all([joined!.release(), joined!.release()]);
      expect([a, b]).toEqual([true, true]);
      expect(await joined!.release()).toBe(true);
      await outer;
      expect(await writer).toBe('w');
      expect(log).toEqual(['joined release', 'outer completes', 'other writer in']);
      expect(calls).toEqual({ acquire: 1, release: 1 });
      expect(joined!.held).toBe(false);
      expect(await joined!.extend()).toBe(false);
    });
  });

  it('a joined acquireWriteLock() lease whose extend() shortens the TTL does not let the other writer in early', async () => {
    await withLockers(async ({ locker, other }) => {
      const log: string[] = [];
      let writer: Promise<unknown> | undefined;
      await lastValueFrom(
        locker.usingWriteLock('k', async () => {
          const joined = await firstValueFrom(locker.acquireWriteLock('k', { waitTimeout: 0 }));
          await joined.extend(100); // shorter TTL on the shared store lease
          writer = otherWriter(other, 'k', log);
          await sleep(400); // renewals keep it (ttl 100 → renewed)
          log.push('outer work ends');
          await joined.release();
        }),
      );
      expect(await writer).toBe('w');
      expect(log).toEqual(['outer work ends', 'other writer in']);
    });
  });
});

describe('attack: the outer lease is lost', () => {
  it('onLost notify on the outer write: a joined read hears of the loss; a read subscribed afterwards does not join the lost lease; no unhandled rejection', async () => {
    await withLockers(async ({ locker, store }) => {
      const extend = store.extendShared.bind(store);
      let lose = false;
      store.extendShared = (key, token, ttl) => (lose ? Promise.resolve('gone' as const) : extend(key, token, ttl));
      const seen: string[] = [];
      const result = await lastValueFrom(
        locker.usingWriteLock(
          'k',
          async (write) => {
            const nested = lastValueFrom(locker.usingReadLock('k', () => timer(5_000), { waitTimeout: 0 })).catch((e: unknown) => e);
            lose = true;
            const err = await nested;
            seen.push(isLockLostError(err) ? 'nested lost' : `nested ${String(err)}`);
            await firstValueFrom(write.lost$, { defaultValue: undefined });
            seen.push(`outer held=${write.held}`);
            lose = false;
            const after = await lastValueFrom(locker.usingReadLock('k', (read) => of(read.token === write.token), { waitTimeout: 1_000 }));
            seen.push(`after joined=${after}`);
            return 'done';
          },
          { onLost: 'notify', ttl: 200 },
        ),
      );
      expect(result).toBe('done');
      expect(seen).toEqual(['nested lost', 'outer held=false', 'after joined=false']);
    });
  });

  it('a joined write inside a write lost by close(): both hear LockLostError, the store is left empty, the streams end', async () => {
    await withLockers(async ({ locker, holders, store }) => {
      const outcomes: string[] = [];
      const running = lastValueFrom(
        locker
          .usingWriteLock('k', () =>
            locker
              .usingReadLock('k', () => timer(5_000), { waitTimeout: 0 })
              .pipe(
                catchError((e: unknown) => {
                  outcomes.push(isLockLostError(e) ? `nested ${e.reason}` : String(e));
                  return throwError(() => e);
                }),
              ),
          )
          .pipe(catchError((e: unknown) => (outcomes.push(isLockLostError(e) ? `outer ${e.reason}` : String(e)), of('x')))),
      );
      let detachedError: unknown;
      const detached = lastValueFrom(
        locker.usingWriteLock('j', () => {
          locker.acquireReadLock('j').subscribe(); // a joined lease never released
          return timer(5_000);
        }),
      ).catch((e: unknown) => (detachedError = e));
      await sleep(30);
      await locker.close();
      await running;
      await detached;
      expect(outcomes).toEqual(['nested locker-closed', 'outer locker-closed']);
      expect(isLockLostError(detachedError)).toBe(true);
      expect(await holders('k')).toBe(0);
      expect(await holders('j')).toBe(0);
      expect(await store.inspectShared('k')).toBeNull();
      // a reentrant read subscribed in a closed locker: refused, not joined
      const refused = await lastValueFrom(locker.acquireReadLock('k')).catch((e: unknown) => e);
      expect((refused as Error).name).toBe('LockerClosedError');
    });
  });
});

describe('attack: the upgrade check', () => {
  it('no false positive: a write from a timer armed in a read’s work, fired after that read ended, takes the write lock', async () => {
    await withLockers(async ({ locker }) => {
      let fired: Promise<unknown> | undefined;
      await lastValueFrom(
        locker.usingReadLock('k', () => {
          fired = new Promise((resolve) => {
            setTimeout(() => {
              lastValueFrom(locker.usingWriteLock('k', () => of('wrote'), { waitTimeout: 1_000 })).then(resolve, resolve);
            }, 100);
          });
          return of('read done');
        }),
      );
      expect(await fired).toBe('wrote');
    });
  });

  // Documents a questionable answer (not a safety issue): the read's work is over, but a detached
  // joined read keeps its hold live, so a write from a timer the work left behind is refused with
  // LockUpgradeError although it would only have waited for the detached read (no self-wait).
  it('a write from a timer left by a finished read whose hold a detached joined read keeps live: LockUpgradeError', async () => {
    await withLockers(async ({ locker }) => {
      let fired: Promise<unknown> | undefined;
      await lastValueFrom(
        locker.usingReadLock('k', () => {
          locker.usingReadLock('k', () => timer(400), { waitTimeout: 0 }).subscribe(); // detached, joined
          fired = new Promise((resolve) => {
            setTimeout(() => {
              lastValueFrom(locker.usingWriteLock('k', () => of('wrote'), { waitTimeout: 2_000 })).then(resolve, resolve);
            }, 100);
          });
          return of('read done');
        }),
      );
      expect(isLockUpgradeError(await fired)).toBe(true);
    });
  });

  it('no false positive: a write of another key, or of another locker (which waits), inside a read', async () => {
    await withLockers(async ({ locker, other }) => {
      const out = await lastValueFrom(
        locker.usingReadLock('k', () =>
          locker
            .usingWriteLock('k2', () => of('k2 written'), { waitTimeout: 0 })
            .pipe(
              mergeMap((v) =>
                other
                  .usingWriteLock('k', () => of('other'), { waitTimeout: 100, reentrant: true })
                  .pipe(
                    catchError((e: unknown) => of(isLockTimeoutError(e) ? 'other waited' : `other ${String(e)}`)),
                    map((o) => [v, o]),
                  ),
              ),
            ),
        ),
      );
      expect(out).toEqual(['k2 written', 'other waited']);
    });
  });

  it('no false negative: a write inside a read inside a read, inside a mutex inside a read, and inside a write that was lost then a read', async () => {
    await withLockers(async ({ locker }) => {
      const errorOf = (o: Observable<unknown>) => lastValueFrom(o.pipe(catchError((e: unknown) => of(e))));
      const a = await errorOf(
        locker.usingReadLock('k', () => locker.usingReadLock('k', () => locker.usingWriteLock('k', () => of('wrote'), { waitTimeout: 2_000 }))),
      );
      expect(isLockUpgradeError(a)).toBe(true);
      const b = await errorOf(
        locker.usingReadLock('k', () => locker.using('k', () => locker.usingWriteLock('k', () => of('wrote'), { waitTimeout: 2_000 }), { waitTimeout: 0 })),
      );
      expect(isLockUpgradeError(b)).toBe(true);
      const c = await errorOf(
        locker.usingReadLock('k', () =>
          locker.usingLocks(['k', 'z'], () => locker.usingWriteLock('k', () => of('wrote'), { waitTimeout: 2_000 }), { waitTimeout: 0 }),
        ),
      );
      expect(isLockUpgradeError(c)).toBe(true);
    });
  });

  it("onBusy: 'skip' with a refused upgrade: errors with LockUpgradeError (not skipped), the read lock stays held", async () => {
    await withLockers(async ({ locker, holders }) => {
      const out = await lastValueFrom(
        locker.usingReadLock('k', (read) =>
          of('w').pipe(
            locker.withWriteLock('k', { onBusy: 'skip' }),
            map(() => 'wrote'),
            catchError((e: unknown) => of(isLockUpgradeError(e) ? 'upgrade refused' : String(e))),
            mergeMap(async (v) => [v, read.held, await holders('k')]),
          ),
        ),
      );
      expect(out).toEqual(['upgrade refused', true, 1]);
    });
  });
});

describe('attack: keys, prefixes and the mutex', () => {
  it('keyPrefix: the join is on the prefixed key; the other locker on the same store key (no prefix) is still excluded', async () => {
    await withLockers(
      async ({ locker, other, calls }) => {
        const log: string[] = [];
        let writer: Promise<unknown> | undefined;
        const tokens = await lastValueFrom(
          locker.usingWriteLock('k', (write) =>
            locker.usingReadLock(
              'k',
              async (read) => {
                writer = otherWriter(other, 'app:k', log);
                await sleep(100);
                log.push('joined read ends');
                return [write.token, read.token];
              },
              { waitTimeout: 0 },
            ),
          ),
        );
        expect(tokens[0]).toBe(tokens[1]);
        expect(await writer).toBe('w');
        expect(log).toEqual(['joined read ends', 'other writer in']);
        expect(calls.acquire).toBe(1);
        // 'app:k' of the prefixed locker is another store key: no join with 'k'
        const apart = await lastValueFrom(locker.usingWriteLock('k', (w) => locker.usingReadLock('app:k', (r) => of(r.token !== w.token), { waitTimeout: 0 })));
        expect(apart).toBe(true);
      },
      { keyPrefix: 'app:' },
    );
  });

  it('withLocks of the same name never joins a read-write hold, nor the reverse', async () => {
    await withLockers(async ({ locker, calls }) => {
      const out = await lastValueFrom(
        of('x').pipe(
          mergeMap(() => locker.usingReadLock('k', (r) => of(r.token), { waitTimeout: 0 })),
          locker.withLocks(['k', 'j'], { waitTimeout: 0 }),
          locker.withWriteLock('k', { waitTimeout: 0 }),
        ),
      );
      expect(typeof out).toBe('string');
      // the read joins the write around the mutex set (the mutex k in between is apart): one grant
      expect(calls.acquire).toBe(1);
      // and a read-write lock inside withLocks(['k']) alone takes its own read lock
      const inSet = await lastValueFrom(
        locker.usingLocks(['k', 'j'], (set) => locker.usingReadLock('k', (r) => of(r.token !== set.leases.get('k')!.token), { waitTimeout: 0 }), {
          waitTimeout: 0,
        }),
      );
      expect(inSet).toBe(true);
      expect(calls.acquire).toBe(2);
    });
  });
});

describe('attack: contexts that are not the holding work', () => {
  it("a read-lock grant woken by X's release (inside X's write of j) does not carry X's hold: code run on it does not join X's write", async () => {
    await withLockers(async ({ locker, other }) => {
      let x: Promise<unknown> | undefined;
      const started = new Promise<void>((resolve) => {
        x = lastValueFrom(
          locker.usingWriteLock('j', () =>
            // X, holding write j, takes and gives back write k while Y waits for read k
            locker.usingWriteLock('k', () => (resolve(), timer(50)), { waitTimeout: 0 }).pipe(mergeMap(() => timer(300))),
          ),
        );
      });
      await started;
      const y = await lastValueFrom(
        locker.acquireReadLock('k', { waitTimeout: 2_000 }).pipe(
          mergeMap((lease) =>
            locker
              .usingWriteLock('j', () => of('joined X'), { waitTimeout: 100 })
              .pipe(
                catchError((e: unknown) => of(isLockTimeoutError(e) ? 'waited' : String(e))),
                tap(() => void lease.release()),
              ),
          ),
        ),
      );
      expect(y).toBe('waited');
      await x;
      void other;
    });
  });

  // DEFECT (pre-existing for withLock, extended to read-write locks by 4a22970): events$ is told
  // in the frames of whatever engine code emitted the event — here the nested read of 'other'
  // granted inside X's write of 'k' — so a handler that takes 'k' joins X's write, not being
  // nested in X's work. Fix: EventReporter emits outside every frame (runInFrame(undefined, …)).
  it('an events$ handler that reacts to an event emitted inside a reentrant write’s work does not join that write', async () => {
    await withLockers(async ({ locker }) => {
      const inside: string[] = [];
      let attempt: Promise<unknown> | undefined;
      const sub = locker.events$.subscribe((event) => {
        if (event.type === 'acquired' && event.key === 'other' && attempt === undefined) {
          attempt = lastValueFrom(
            locker
              .usingWriteLock('k', () => (inside.push('handler in'), of('joined')), { waitTimeout: 100 })
              .pipe(catchError((e: unknown) => of(isLockTimeoutError(e) ? 'waited' : String(e)))),
          );
        }
      });
      try {
        await lastValueFrom(
          locker.usingWriteLock('k', () => {
            inside.push('X in');
            return locker.usingReadLock('other', () => timer(300), { waitTimeout: 0 }).pipe(tap({ finalize: () => inside.push('X out') }));
          }),
        );
        expect(await attempt).toBe('waited');
      } finally {
        sub.unsubscribe();
      }
    });
  });

  it('a lost$ subscriber of a joined hold that takes the write lock again does not join the lost lease', async () => {
    await withLockers(async ({ locker, store }) => {
      const extend = store.extendShared.bind(store);
      let lose = false;
      store.extendShared = (key, token, ttl) => (lose ? Promise.resolve('gone' as const) : extend(key, token, ttl));
      let retaken: Promise<unknown> | undefined;
      let lostToken = '';
      await lastValueFrom(
        locker
          .usingWriteLock(
            'k',
            async (write) => {
              lostToken = write.token;
              const joined = await firstValueFrom(locker.acquireReadLock('k'));
              joined.lost$.subscribe(() => {
                lose = false;
                retaken = lastValueFrom(locker.usingWriteLock('k', (again) => of(again.token), { waitTimeout: 2_000 })).catch((e: unknown) => e);
              });
              lose = true;
              await sleep(1_000);
            },
            { ttl: 200 },
          )
          .pipe(catchError(() => EMPTY)),
        { defaultValue: undefined },
      );
      const token = await retaken;
      expect(typeof token).toBe('string');
      expect(token).not.toBe(lostToken);
    });
  });
});

/**
 * Overlap fuzz: two reentrant lockers (two "processes") on one store run random trees of nested
 * read and write locks on keys taken in one order (no lock-order deadlocks): nested joins, nested
 * streams that error, are unsubscribed early, or outlive their outer work (detached), and joined
 * acquire() leases released late. Each work entry records its lease's token: the first entry of a
 * token is its store lease's mode. Checked: no write joins a read; while a token whose store lease
 * is a write is inside a key, no other token is; every store lease is given back once; everything
 * ends (no LockTimeoutError: nothing waits for itself) and the store is left empty.
 */
describe('attack: overlap fuzz of nested read and write locks', () => {
  const KEYS = ['a', 'b', 'c'];
  for (const seed of (process.env.FUZZ_SEEDS ?? '1,2,3,4').split(',').map(Number)) {
    it(`seed ${seed}`, async () => {
      const store = new MemoryLockStore();
      const releases = new Map<string, number>();
      const releaseShared = store.releaseShared.bind(store);
      store.releaseShared = (key, token) => {
        releases.set(`${key}/${token}`, (releases.get(`${key}/${token}`) ?? 0) + 1);
        return releaseShared(key, token);
      };
      const lockers = [0, 1].map(() => createLocker({ store, keyPrefix: '', reentrant: true, ttl: 2_000 }));
      const random = prng(seed);
      const firstMode = new Map<string, 'read' | 'write'>();
      const inside = new Map<string, Map<string, number>>(); // key → token → entries
      const violations: string[] = [];
      const errors: string[] = [];
      const background: Promise<unknown>[] = [];
      const enter = (key: string, token: string, mode: 'read' | 'write') => {
        const first = firstMode.get(token);
        if (first === undefined) firstMode.set(token, mode);
        else if (first === 'read' && mode === 'write') violations.push(`write joined read ${token} on ${key}`);
        const tokens = inside.get(key) ?? new Map<string, number>();
        inside.set(key, tokens);
        tokens.set(token, (tokens.get(token) ?? 0) + 1);
        if (tokens.size > 1 && [...tokens.keys()].some((t) => firstMode.get(t) === 'write'))
          violations.push(`${key}: ${[...tokens.keys()].join(' & ')} inside together`);
      };
      const leave = (key: string, token: string) => {
        const tokens = inside.get(key)!;
        const n = tokens.get(token)! - 1;
        if (n === 0) tokens.delete(token);
        else tokens.set(token, n);
      };
      const opts = { waitTimeout: 10_000 };
      const pause = () => sleep(Math.floor(random() * 8));

      /** A locked stream on `key` (read or write) of `locker`, with nested streams down to `depth`. */
      const stream = (locker: Locker, key: string, mode: 'read' | 'write', depth: number): Observable<unknown> => {
        const using = mode === 'read' ? locker.usingReadLock.bind(locker) : locker.usingWriteLock.bind(locker);
        return using(key, (lease, signal) => track(work(key, mode, depth, locker, lease, signal)), opts);
      };
      /** Every work run, until it settles (an unsubscribed one runs on: Promise-based work cannot be stopped). */
      const running = new Set<Promise<unknown>>();
      const track = <T>(p: Promise<T>): Promise<T> => {
        running.add(p);
        void p.finally(() => running.delete(p)).catch(() => undefined);
        return p;
      };
      const work = async (key: string, mode: 'read' | 'write', depth: number, locker: Locker, lease: Lease, signal: AbortSignal): Promise<void> => {
        enter(key, lease.token, mode);
        // (a Promise-based work cannot be stopped: once unsubscribed or lost, it is out)
        let out = false;
        const leaveOnce = () => {
          if (!out) leave(key, lease.token);
          out = true;
        };
        signal.addEventListener('abort', leaveOnce);
        try {
          await pause();
          const later = KEYS.slice(KEYS.indexOf(key));
          const n = depth === 0 ? 0 : Math.floor(random() * 3);
          for (let i = 0; i < n; i++) {
            const k = later[Math.floor(random() * later.length)]!;
            const m = random() < 0.5 ? 'read' : 'write';
            const child = stream(locker, k, m, depth - 1).pipe(catchError((e: unknown) => (note(e), EMPTY)));
            const shape = Math.floor(random() * 5);
            if (shape === 0)
              background.push(lastValueFrom(child, { defaultValue: undefined })); // detached
            else if (shape === 1) {
              const sub = child.subscribe(); // unsubscribed early
              await pause();
              sub.unsubscribe();
            } else if (shape === 2) {
              const acquire = m === 'read' ? locker.acquireReadLock(k, opts) : locker.acquireWriteLock(k, opts);
              const held = await firstValueFrom(acquire).catch((e: unknown) => (note(e), undefined));
              if (held !== undefined) {
                enter(k, held.token, m);
                const done = track(
                  (async () => {
                    await pause();
                    leave(k, held.token);
                    await held.release();
                  })(),
                );
                if (random() < 0.5) background.push(done);
                else await done;
              }
            } else if (shape === 3)
              await lastValueFrom(
                child.pipe(
                  mergeMap(() => throwError(() => new Error('boom'))),
                  catchError(() => EMPTY),
                ),
                { defaultValue: undefined },
              );
            else await lastValueFrom(child, { defaultValue: undefined });
          }
          await pause();
        } finally {
          leaveOnce();
        }
      };
      const note = (e: unknown) => {
        if (isLockUpgradeError(e)) return;
        errors.push(String(e));
      };
      try {
        const roots = Array.from({ length: 40 }, (_, i) => {
          const locker = lockers[i % 2]!;
          const key = KEYS[Math.floor(random() * KEYS.length)]!;
          return lastValueFrom(stream(locker, key, random() < 0.5 ? 'read' : 'write', 3), { defaultValue: undefined }).catch((e: unknown) => note(e));
        });
        await Promise.all(roots);
        // detached streams end too (they may add more while running)
        for (let i = 0; i < background.length; i++) await background[i];
        while (running.size > 0) {
          await Promise.allSettled([...running]);
          for (let i = 0; i < background.length; i++) await background[i];
        }
        // (an unsubscribed stream's release finishes in the background)
        const end = Date.now() + 1_000;
        while (Date.now() < end && (await Promise.all(KEYS.map((k) => store.inspectShared(k)))).some((info) => info !== null)) await sleep(10);
        expect(violations).toEqual([]);
        expect(errors).toEqual([]);
        expect([...releases.values()].filter((n) => n !== 1)).toEqual([]);
        for (const key of KEYS) expect(await store.inspectShared(key)).toBeNull();
      } finally {
        for (const locker of lockers) await locker.close();
      }
    });
  }
});

describe('attack: events$ context (the mutex twin, before 4a22970 too)', () => {
  // DEFECT, same cause as the read-write case above: fails today.
  it("an events$ handler taking the mutex k on 'acquired' of another key inside X's withLock(k) does not join X", async () => {
    await withLockers(async ({ locker }) => {
      let attempt: Promise<unknown> | undefined;
      const sub = locker.events$.subscribe((event) => {
        if (event.type === 'acquired' && event.key === 'other' && attempt === undefined) {
          attempt = lastValueFrom(
            locker.using('k', () => of('joined'), { waitTimeout: 100 }).pipe(catchError((e: unknown) => of(isLockTimeoutError(e) ? 'waited' : String(e)))),
          );
        }
      });
      try {
        await lastValueFrom(locker.using('k', () => locker.using('other', () => timer(300), { waitTimeout: 0 })));
        expect(await attempt).toBe('waited');
      } finally {
        sub.unsubscribe();
      }
    });
  });
});
