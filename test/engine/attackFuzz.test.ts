/**
 * Attack: a random hostile workload on the in-memory store seen through a slow, FIFO "connection"
 * (each call waits 0-2 ms on its way and 0-2 ms on its way back, in order, and now and then stalls
 * past commandTimeout, so calls time out and are answered late). Several lockers (standing for
 * processes) with the local gate on and off, cohort on and off, tiny and mixed TTLs, renewal on
 * and off; acquisitions cancelled at random moments; events$ and lost$ handlers that release
 * leases, unsubscribe others and close lockers synchronously.
 *
 * Promises checked: never two `held` leases of one key; fences grow across holders; no error but
 * the library's own (and the retry policy's) ends an acquisition; nothing throws out of
 * subscribe/unsubscribe/release; no unhandled rejection or uncaught exception (an illegal gate move
 * throws under RXJS_LOCK_STRICT=1 and would surface as one of these); after close() nothing is
 * left in the store once the TTLs have passed, and no gate is left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type AcquireResult, type ExtendOutcome, type LockStore } from '../../src/index.js';
import { prng, runFuzz, countOf, type FuzzLocker } from './attackFuzz.js';

const problems: string[] = [];
const onUnhandled = (reason: unknown) => problems.push(`unhandledRejection: ${String(reason)}`);
const onUncaught = (error: unknown) => problems.push(`uncaughtException: ${String(error)}`);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUncaught);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUncaught);
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

/** A store reached over a slow connection that keeps the order of calls and answers. */
class SlowConnectionStore implements LockStore {
  private readonly out = new Fifo();
  private readonly back = new Fifo();
  constructor(
    private readonly inner: LockStore,
    private readonly rng: () => number,
    private readonly stallChance: number,
  ) {}

  private send<T>(op: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stall = this.rng() < this.stallChance ? 20 + this.rng() * 30 : 0;
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
  release(key: string, token: string): Promise<boolean> {
    return this.send(() => this.inner.release(key, token));
  }
  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return this.send(() => this.inner.extend(key, token, ttlMs));
  }
}

describe('attack: random hostile workload on the in-memory store over a slow connection', () => {
  for (const [seed, slow] of [[1, true], [2, true], [3, true], [4, false], [5, false]] as const) {
    it(`seed ${seed}${slow ? '' : ' (store answering in microtasks)'}: no overlap, fences grow, nothing strange, nothing left`, async () => {
      const rng = prng(seed);
      const memory = new MemoryLockStore();
      const lockers: FuzzLocker[] = [];
      const all: FuzzLocker[] = [];
      let n = 0;
      const make = (): FuzzLocker => {
        const i = n++;
        const store = slow ? new SlowConnectionStore(memory, rng, 0.02) : memory;
        const locker = createLocker({
          store,
          keyPrefix: '',
          commandTimeout: 15,
          localGate: i % 3 !== 2,
          cohort: i % 4 === 3 ? false : { maxPasses: 1 + (i % 5), maxMs: 12, roundMs: 24 },
          ttl: 40,
        });
        const fz = { name: `L${i}`, locker };
        all.push(fz);
        return fz;
      };
      for (let i = 0; i < 4; i++) lockers.push(make());
      const report = await runFuzz(lockers, rng, {
        keys: ['a', 'b', 'c'],
        durationMs: slow ? 5000 : 3000,
        maxLive: 40,
        ttls: [4, 10, 20, 40, 80],
        closeChance: 0.002,
        replace: () => make(),
      });
      await Promise.all(all.map((fz) => fz.locker.close()));
      await new Promise((resolve) => setTimeout(resolve, 300)); // longest TTL (80 ms) and stalls
      const leftKeys = memory.size;
      const leftGates = all.map((fz) => (fz.locker as unknown as { liveKeys: number }).liveKeys).reduce((a, b) => a + b, 0);
      memory.close();
      console.log(`seed ${seed}: ${countOf(report)}`);
      expect({
        overlaps: report.overlaps.slice(0, 5),
        fenceRegressions: report.fenceRegressions.slice(0, 5),
        strangeErrors: report.strangeErrors.slice(0, 5),
        thrown: report.thrown.slice(0, 5),
        problems: problems.slice(0, 5),
        leftKeys,
        leftGates,
      }).toEqual({ overlaps: [], fenceRegressions: [], strangeErrors: [], thrown: [], problems: [], leftKeys: 0, leftGates: 0 });
      expect(report.grants).toBeGreaterThan(100);
    });
  }
});
