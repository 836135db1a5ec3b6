/**
 * Attacks on 275ce13 and c02658c: a release tells the Redis store only the fences its holders were
 * given (the turn's FenceBlock.issued), not all its grant reserved, and says 'passed' once
 * ⌈given / 4⌉ + 1 µs went by since the grant's answer (codec.ts passedAfterUs). A fence reserved
 * and never given protects nothing, so the next grant may take it — but never one a holder got.
 *
 * Invariant asserted: every fence a holder was given (or a later grant's first fence) is above
 * every fence given before it for the key.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { passedAfterUs, releaseArgs } from '../../src/backends/redis/protocol/codec.js';
import type { AcquireResult, ReleasedGrant } from '../../src/store/LockStore.js';
import { redisSuite } from '../support/redisSuite.js';
import { blockOf, expectIncreasing, storeOn, warmScripts, type Block } from '../support/fenceBlocks.js';
import { RecordingStore } from '../support/recordingStore.js';

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'] });

/** Spins until `us` microseconds passed since `since` (performance.now()). */
function spinUntil(since: number, us: number): void {
  while ((performance.now() - since) * 1000 < us) {
    // busy
  }
}

describe('a release that says fewer fences than its grant reserved', () => {
  it("store calls: reserved 16/64/1024, given 1, 2, 4, 5, 16, 600 or 1023, released around the 'passed' threshold of what was given, the next grant pipelined behind: above every fence given (600 rounds)", async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'given';
    const blocks: Block[] = [];
    let passed = 0;
    for (let i = 0; i < 600; i++) {
      const reserved = [16, 64, 1024][i % 3]!;
      const given = Math.min(reserved, [1, 2, 4, 5, 16, 600, 1023][i % 7]!);
      const r: AcquireResult = await store.tryAcquire(key, `A${i}`, 30_000, reserved);
      const answeredAt = performance.now();
      const whole = blockOf(`A${i}`, r, reserved);
      expect(whole.last - whole.first + 1, 'the common path grants all it was asked').toBe(reserved);
      blocks.push({ who: `A${i} (given ${given} of ${reserved})`, first: whole.first, last: whole.first + given - 1 });
      const said: ReleasedGrant = { fence: whole.first, fences: given, answeredAt };
      spinUntil(answeredAt, Math.max(0, passedAfterUs(given) + ((i * 7) % 13) - 6));
      if (releaseArgs('x', said, performance.now())[1] === 'passed') passed++;
      const [released, b] = await Promise.all([store.release(key, `A${i}`, said), store.tryAcquire(key, `B${i}`, 30_000, 1)]);
      expect(released).toBe(true);
      const bb = blockOf(`B${i}`, b, 1);
      blocks.push(bb);
      expect(await store.release(key, `B${i}`, { fence: bb.first, fences: 1, answeredAt: performance.now() })).toBe(true);
    }
    expect(passed, "some releases said 'passed'").toBeGreaterThan(50);
    expectIncreasing(blocks);
  });

  it('the engine: k local holders in one turn (passes within the spare block and past it), the last one releases with another grant sent beside it: that grant is above every fence given', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const recording = new RecordingStore(store);
    const locker = createLocker({ store: recording, keyPrefix: '', cohort: { maxPasses: 1000, maxMs: 60_000 } });
    suite.closers.push(() => locker.close());
    const key = 'engine-given';
    const given: number[] = [];
    for (let round = 0; round < 40; round++) {
      const k = 1 + (round % 20);
      // All k subscribe at once: the first starts the store call with nobody behind it (a spare
      // block of 16), the others wait locally and are passed the lock in turn.
      const leases = Array.from({ length: k }, () => firstValueFrom(locker.acquire(key, { ttl: 5000 })));
      for (let j = 0; j < k - 1; j++) {
        const lease = await leases[j]!;
        given.push(lease.fence);
        await lease.release();
      }
      const last = await leases[k - 1]!;
      given.push(last.fence);
      const [, b] = await Promise.all([last.release(), store.tryAcquire(key, `B${round}`, 5000, 1)]);
      const release = recording.calls.filter((c) => c.op === 'release').at(-1)!;
      expect(release.grant!.fence + release.grant!.fences - 1, `round ${round}: the release says the last fence given`).toBe(last.fence);
      if (b.acquired) {
        expect(b.fence, `round ${round} (k ${k}): the grant beside the release vs the last fence given`).toBeGreaterThan(last.fence);
        given.push(b.fence);
        await store.release(key, `B${round}`, { fence: b.fence, fences: 1, answeredAt: performance.now() });
      }
    }
    for (let i = 1; i < given.length; i++) expect(given[i], `fence ${i} vs the one before`).toBeGreaterThan(given[i - 1]!);
  });
});
