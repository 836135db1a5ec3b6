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
import { afterAll, describe, expect, it } from 'vitest';
import { createLocker, type AcquireResult, type ExtendOutcome } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { ExtendRequest, LeaveResult } from '../../src/store/capabilities.js';
import { countOf, findingsOf, gatesLeft, NO_FINDINGS, prng, runFuzz, SlowLinkStore, watchProblems, type FuzzLocker } from '../engine/attackFuzz.js';
import { liveKeysOf } from '../support/lockKeys.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const problems = watchProblems();
const suite = redisSuite({ flush: false, unhandled: 'off' });
afterAll(() => {
  suite.server.resume();
});

/** The Redis store behind a slow link that keeps calls and answers in order (signals are not delayed). */
class SlowLink extends SlowLinkStore<RedisLockStore> {
  constructor(inner: RedisLockStore, rng: () => number, stallChance: number) {
    super(inner, rng, stallChance, { min: 40, spread: 40 });
  }
  tryAcquireInLine(key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave'): Promise<AcquireResult> {
    return this.send(() => this.inner.tryAcquireInLine(key, token, ttlMs, fences, place));
  }
  leave(key: string, token: string): Promise<LeaveResult> {
    return this.send(() => this.inner.leave(key, token));
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
      await suite.admin.flushall();
      const rng = prng(seed);
      const cleanups: Array<() => unknown> = [];
      const all: FuzzLocker[] = [];
      let n = 0;
      const make = (): FuzzLocker => {
        const i = n++;
        const client = connect(suite.server);
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
            void suite.admin.script('FLUSH').catch(() => undefined);
          } else if (x < 0.007) {
            count('kill pubsub');
            void suite.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub').catch(() => undefined);
          } else if (x < 0.009) {
            count('kill normal');
            // (the admin connection is killed too; ioredis reconnects it)
            void suite.admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => undefined);
          } else if (x < 0.011) {
            count('client pause');
            void suite.admin.call('CLIENT', 'PAUSE', 20, 'WRITE').catch(() => undefined);
          } else if (x < 0.013 && !paused) {
            count('sigstop');
            paused = true;
            suite.server.pause();
            setTimeout(() => {
              suite.server.resume();
              paused = false;
            }, 25);
          }
        },
      });
      await sleep(50);
      suite.server.resume();
      await Promise.all(all.map((fz) => fz.locker.close()));
      const leftGates = gatesLeft(all);
      for (const cleanup of cleanups.reverse()) await cleanup();
      await sleep(800); // TTLs (≤ 150 ms), places (≤ 2 × 300 ms), fence counters
      const left = await liveKeysOf(suite.admin);
      console.log(`seed ${seed}: ${countOf(report)}, faults ${JSON.stringify(faults)}`);
      expect({ ...findingsOf(report, problems), leftGates, left }).toEqual({ ...NO_FINDINGS, leftGates: 0, left: [] });
      expect(report.grants).toBeGreaterThan(100);
    });
  }
});
