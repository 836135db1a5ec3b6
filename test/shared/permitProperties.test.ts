/**
 * Property tests (fast-check) of semaphores and read-write locks on the in-memory store:
 * - the store under random schedules of acquisitions, releases, departures and clock jumps (a
 *   virtual clock): the permits held never exceed the capacity, match the holders' weights, and
 *   every grant goes to the head of the line (nobody is overtaken, whatever its weight);
 * - the locker under random schedules of semaphore and read/write jobs on real timers: never more
 *   than `limit` permits in use, never a writer beside anyone, every job done.
 */
import fc from 'fast-check';
import { defer, finalize, lastValueFrom, merge, mergeMap, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore } from '../../src/index.js';

const CAPACITY = 4;

type Op =
  | { readonly kind: 'acquire'; readonly token: number; readonly weight: number; readonly ttl: number; readonly leave: boolean }
  | { readonly kind: 'release'; readonly token: number }
  | { readonly kind: 'leave'; readonly token: number }
  | { readonly kind: 'tick'; readonly ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      token: fc.nat(7),
      weight: fc.constantFrom(1, 1, 2, CAPACITY),
      ttl: fc.integer({ min: 20, max: 200 }),
      leave: fc.boolean(),
    }),
    weight: 5,
  },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), token: fc.nat(7) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), token: fc.nat(7) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 120 }) }), weight: 2 },
);

describe('the shared store under random schedules', () => {
  it('never holds more than the capacity, and grants only the head of the line', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        let now = 0;
        // places never lapse here (a lapse is a departure the model would have to guess)
        const store = new MemoryLockStore({ clock: () => now, placeTtl: 2 ** 30 });
        const key = 'k';
        /** Tokens in line, in arrival order, as the answers told. */
        let line: string[] = [];
        let holders = new Set<string>();
        let arrivalGranted = false;
        for (const o of ops) {
          if (o.kind === 'tick') now += o.ms;
          else if (o.kind === 'release') await store.releaseShared(key, `t${o.token}`);
          else if (o.kind === 'leave') {
            await store.leaveShared(key, `t${o.token}`);
            line = line.filter((t) => t !== `t${o.token}`);
          } else {
            const token = `t${o.token}`;
            const result = await store.tryAcquireShared(key, token, o.ttl, o.weight, CAPACITY, o.leave ? 'leave' : 'keep');
            if (!result.acquired) {
              if (o.leave) line = line.filter((t) => t !== token);
              else if (!line.includes(token) && !holders.has(token)) line.push(token);
            } else if (!holders.has(token) && !line.includes(token)) {
              // a new arrival is granted only when nobody waits once the call has granted the
              // waiters that fit (inspectShared only reads: the grants come with the store's calls)
              arrivalGranted = true;
            }
          }
          const info = await store.inspectShared(key);
          const now_ = new Set((info?.holders ?? []).map((h) => h.token));
          if (arrivalGranted) expect(line.filter((t) => !now_.has(t))).toEqual([]);
          arrivalGranted = false;
          // every new holder that was in line was at its head: the line's granted members form a prefix
          const promoted = line.filter((t) => now_.has(t) && !holders.has(t));
          expect(promoted).toEqual(line.slice(0, promoted.length));
          line = line.filter((t) => !now_.has(t));
          holders = now_;
          const used = (info?.holders ?? []).reduce((n, h) => n + h.weight, 0);
          expect(info?.used ?? 0).toBe(used);
          expect(used).toBeLessThanOrEqual(CAPACITY);
          // a writer (all permits) holds alone
          if ((info?.holders ?? []).some((h) => h.weight === CAPACITY)) expect(info!.holders).toHaveLength(1);
        }
        store.close();
      }),
      { numRuns: 200 },
    );
  });
});

type Job = { readonly kind: 'permit' | 'read' | 'write'; readonly permits: number; readonly at: number; readonly holdMs: number };

const job: fc.Arbitrary<Job> = fc.record({
  kind: fc.constantFrom('permit' as const, 'read' as const, 'write' as const),
  permits: fc.integer({ min: 1, max: 3 }),
  at: fc.integer({ min: 0, max: 20 }),
  holdMs: fc.integer({ min: 0, max: 6 }),
});

describe('the locker under random schedules', () => {
  it('keeps semaphore and read-write invariants, and serves every job', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(job, { minLength: 1, maxLength: 12 }), async (jobs) => {
        const locker = createLocker({ store: new MemoryLockStore(), retry: { minDelay: 1, jitter: 2 }, waitTimeout: 5_000 });
        let permits = 0;
        let readers = 0;
        let writers = 0;
        const violations: string[] = [];
        let done = 0;
        const run = (j: Job) => {
          const work = defer(() => {
            if (j.kind === 'permit') permits += j.permits;
            else if (j.kind === 'read') readers++;
            else writers++;
            if (permits > 3) violations.push(`${permits} permits held`);
            if (writers > 1 || (writers === 1 && readers > 0)) violations.push(`${writers} writers beside ${readers} readers`);
            return timer(j.holdMs).pipe(
              finalize(() => {
                if (j.kind === 'permit') permits -= j.permits;
                else if (j.kind === 'read') readers--;
                else writers--;
                done++;
              }),
            );
          });
          const locked =
            j.kind === 'permit'
              ? work.pipe(locker.withPermit('sem', { limit: 3, permits: j.permits }))
              : j.kind === 'read'
                ? work.pipe(locker.withReadLock('rw'))
                : work.pipe(locker.withWriteLock('rw'));
          return timer(j.at).pipe(mergeMap(() => locked));
        };
        await lastValueFrom(merge(...jobs.map(run)), { defaultValue: undefined });
        await locker.close();
        expect(violations).toEqual([]);
        expect(done).toBe(jobs.length);
      }),
      { numRuns: 15 },
    );
  });
});
