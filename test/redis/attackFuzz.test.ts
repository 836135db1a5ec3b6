/**
 * Attack: the random hostile workload of ../engine/attackFuzz.ts on a real Redis, through the Redis
 * store with its line, direct hand-off and wake-up signals. Several lockers on their own
 * connections and stores (standing for processes), some behind a slow FIFO link (0-2 ms each way,
 * now and then a stall past commandTimeout); local gate on and off, cohort on and off, tiny and
 * mixed TTLs, renewal on and off, place TTLs of 100 and 300 ms; events$ / lost$ handlers that
 * release, unsubscribe and close synchronously. Operational faults while it runs, none of which
 * loses data: SCRIPT FLUSH, CLIENT KILL TYPE pubsub, CLIENT KILL TYPE normal (ioredis re-sends
 * what was in flight), CLIENT PAUSE, SIGSTOP/SIGCONT.
 *
 * Promises: never two `held` leases of one key; fences grow across holders; only the library's own
 * errors; nothing thrown at the caller; no unhandled rejection or uncaught exception (an illegal
 * gate move throws under RXJS_LOCK_STRICT=1); after close() and the TTLs, Redis is empty.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type AcquireResult, type ExtendOutcome, type LockStore } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { ExtendRequest, LeaveResult } from '../../src/store/capabilities.js';
import { countOf, prng, runFuzz, type FuzzLocker } from '../engine/attackFuzz.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { sleep } from '../support/timing.js';

let server: EmbeddedRedis;
let admin: Redis;
const problems: string[] = [];
const onUnhandled = (reason: unknown) => problems.push(`unhandledRejection: ${String(reason)}`);
const onUncaught = (error: unknown) => problems.push(`uncaughtException: ${String(error)}`);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUncaught);
  server = await EmbeddedRedis.start();
  admin = connect(server);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUncaught);
  server.resume();
  admin?.disconnect();
  await server?.stop();
});

/** Runs functions at given times, strictly in the order they were queued. */
class Fifo {
  private readonly queue: Array<{ at: number; run: () => void }> = [];
  private lastAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  push(at: number, run: () => void): void {
    this.lastAt = Math.max(this.lastAt, at);
    this.queue.push({ at: this.lastAt, run });
    this.arm();
  }
  private arm(): void {
    if (this.timer !== undefined || this.queue.length === 0) return;
    this.timer = setTimeout(this.pump, Math.max(0, this.queue[0]!.at - performance.now()));
  }
  private readonly pump = (): void => {
    this.timer = undefined;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0]!.at <= now) this.queue.shift()!.run();
    this.arm();
  };
}

/** The Redis store behind a slow link that keeps calls and answers in order (signals are not delayed). */
class SlowLink implements LockStore {
  private readonly out = new Fifo();
  private readonly back = new Fifo();
  constructor(
    readonly inner: RedisLockStore,
    private readonly rng: () => number,
    private readonly stallChance: number,
  ) {}
  private send<T>(op: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stall = this.rng() < this.stallChance ? 40 + this.rng() * 40 : 0;
      this.out.push(performance.now() + this.rng() * 2 + stall, () => {
        op().then(
          (value) => this.back.push(performance.now() + this.rng() * 2, () => resolve(value)),
          (error: unknown) => this.back.push(performance.now(), () => reject(error)),
        );
      });
    });
  }
  tryAcquire(key: string, token: string, ttlMs: number, fences?: number): Promise<AcquireResult> {
    return this.send(() => this.inner.tryAcquire(key, token, ttlMs, fences));
  }
  tryAcquireInLine(key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave'): Promise<AcquireResult> {
    return this.send(() => this.inner.tryAcquireInLine(key, token, ttlMs, fences, place));
  }
  leave(key: string, token: string): Promise<LeaveResult> {
    return this.send(() => this.inner.leave(key, token));
  }
  release(key: string, token: string): Promise<boolean> {
    return this.send(() => this.inner.release(key, token));
  }
  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return this.send(() => this.inner.extend(key, token, ttlMs));
  }
  extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    return this.send(() => this.inner.extendMany(requests));
  }
  get watch(): RedisLockStore['watch'] {
    return this.inner.watch;
  }
  checkKey(key: string): void {
    this.inner.checkKey(key);
  }
}

describe('attack: random hostile workload on a real Redis with operational faults', () => {
  for (const seed of [11, 12]) {
    it(`seed ${seed}: no overlap, fences grow, nothing strange, Redis empty afterwards`, async () => {
      await admin.flushall();
      const rng = prng(seed);
      const cleanups: Array<() => unknown> = [];
      const all: FuzzLocker[] = [];
      let n = 0;
      const make = (): FuzzLocker => {
        const i = n++;
        const client = connect(server);
        const storeOptions: RedisLockStoreOptions = { placeTtl: i % 2 === 0 ? 100 : 300, lingerMs: i % 3 === 0 ? 0 : 50, wakeUp: i % 5 !== 4 };
        const redisStore = new RedisLockStore(client, storeOptions);
        const store = i % 3 === 1 ? new SlowLink(redisStore, rng, 0.02) : redisStore;
        const locker = createLocker({
          store,
          keyPrefix: '',
          commandTimeout: 30,
          localGate: i % 4 !== 3,
          cohort: i % 5 === 2 ? false : { maxPasses: 1 + (i % 7), maxMs: 12, roundMs: 24 },
          ttl: 60,
        });
        cleanups.push(
          () => client.disconnect(),
          () => redisStore.close(),
        );
        const fz = { name: `L${i}`, locker };
        all.push(fz);
        return fz;
      };
      const lockers = [0, 1, 2, 3, 4].map(() => make());
      let paused = false;
      const faults: Record<string, number> = {};
      const count = (what: string) => (faults[what] = (faults[what] ?? 0) + 1);
      const report = await runFuzz(lockers, rng, {
        keys: ['a', 'b', '{t}x', '{t}y'],
        durationMs: 9000,
        maxLive: 40,
        ttls: [4, 10, 30, 60, 150],
        closeChance: 0.002,
        replace: () => make(),
        tick: (r) => {
          const x = r();
          if (x < 0.004) {
            count('script flush');
            void admin.script('FLUSH').catch(() => undefined);
          } else if (x < 0.007) {
            count('kill pubsub');
            void admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => undefined);
          } else if (x < 0.009) {
            count('kill normal');
            // (the admin connection is killed too; ioredis reconnects it)
            void admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => undefined);
          } else if (x < 0.011) {
            count('client pause');
            void admin.call('CLIENT', 'PAUSE', 20, 'WRITE').catch(() => undefined);
          } else if (x < 0.013 && !paused) {
            count('sigstop');
            paused = true;
            server.pause();
            setTimeout(() => {
              server.resume();
              paused = false;
            }, 25);
          }
        },
      });
      await sleep(50);
      server.resume();
      await Promise.all(all.map((fz) => fz.locker.close()));
      const leftGates = all.map((fz) => (fz.locker as unknown as { liveKeys: number }).liveKeys).reduce((a, b) => a + b, 0);
      for (const cleanup of cleanups.reverse()) await cleanup();
      await sleep(800); // TTLs (≤ 150 ms), places (≤ 2 × 300 ms), fence counters
      const keys = await admin.keys('*');
      const alive = await Promise.all(keys.map(async (key) => ((await admin.exists(key)) === 1 ? key : undefined)));
      const left = alive.filter((key) => key !== undefined);
      console.log(`seed ${seed}: ${countOf(report)}, faults ${JSON.stringify(faults)}`);
      expect({
        overlaps: report.overlaps.slice(0, 5),
        fenceRegressions: report.fenceRegressions.slice(0, 5),
        strangeErrors: report.strangeErrors.slice(0, 5),
        thrown: report.thrown.slice(0, 5),
        problems: problems.slice(0, 5),
        leftGates,
        left,
      }).toEqual({ overlaps: [], fenceRegressions: [], strangeErrors: [], thrown: [], problems: [], leftGates: 0, left: [] });
      expect(report.grants).toBeGreaterThan(100);
    });
  }
});
