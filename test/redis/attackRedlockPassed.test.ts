/**
 * Attacks on the quorum store's fences after b9c99c0 (fence floor, covers(): no raise round when a
 * quorum of winners covers the block), c02658c ('passed' after ⌈given / 4⌉ + 1 µs) and 275ce13 (a
 * release says only the fences its holders were given). Each node's release says 'passed' or the
 * quorum block's last fence given, from the quorum's block and the time its answer reached the
 * caller (QuorumNode.release → codec.ts releaseArgs), whatever that node's own block was.
 *
 * Over 3 private Redis servers: a node frozen (SIGSTOP) while the acquire and the release are out
 * (it runs them late, after a newer grant was decided without it), a node whose fences stand ahead
 * (a clock ahead, simulated by a long-lived fence record: no faketime here), stores with and without
 * the floor's knowledge of the clocks, releases right around the 'passed' threshold of the fences
 * given, and the next grant sent on the same connections right behind the release.
 *
 * Invariant asserted: every fence given for a key is above every fence given before it.
 */
import { firstValueFrom } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { passedAfterUs, releaseArgs } from '../../src/backends/redis/protocol/codec.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { RedlockStore } from '../../src/redis.js';
import type { AcquireResult } from '../../src/store/LockStore.js';
import { expectIncreasing, type Block, seedOf } from '../support/fenceBlocks.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { sleep } from '../support/timing.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `attack-passed:${what}:${++n}`;

/** Spins until `us` microseconds passed since `since` (performance.now()). */
function spinUntil(since: number, us: number): void {
  while ((performance.now() - since) * 1000 < us) {
    // busy
  }
}

describe("RedlockStore: releases that say 'passed' or the last fence given, per node", () => {
  it("a node frozen mid-round, a node ahead, stores with and without the floor's knowledge, releases around the threshold of the fences given, the next grant right behind: every fence given above the ones before (90 rounds)", async () => {
    const clients = nodes.clients();
    // The "learnt" store keeps its floor knowledge across rounds; each round's second grant comes
    // from a store on the same connections that knows no clock (no floor: clock-start blocks).
    const learnt = new RedlockStore(clients, { nodeTimeout: 150 });
    await nodes.connected();
    const key = fresh('frozen');
    const blocks: Block[] = [];
    let passed = 0;
    let refused = 0;
    for (let i = 0; i < 90; i++) {
      if (i === 30) {
        // node 2's fences stand 5 s ahead from now on (a clock ahead of the others)
        const seed = await seedOf(nodes.admins[2]!);
        await nodes.admins[2]!.set(helperKey(key, 'fence'), String(seed + 5_000 * 4_000), 'PX', 60_000);
      }
      const frozen = i % 4; // 3: none
      const blind = new RedlockStore(clients, { nodeTimeout: 150 });
      const [first, second] = i % 2 === 0 ? [learnt, blind] : [blind, learnt];
      if (frozen < 3) nodes.servers[frozen]!.pause();
      try {
        const reserved = [1, 16, 1024][i % 3]!;
        const a: AcquireResult = await first.tryAcquire(key, `A${i}`, 30_000, reserved);
        const answeredAt = performance.now();
        if (!a.acquired) throw new Error(`round ${i}: A refused ${JSON.stringify(a)}`);
        const got = a.fences ?? reserved;
        const given = Math.min(got, [1, 2, 5, 16, 600][i % 5]!);
        blocks.push({ who: `A${i} (given ${given} of ${got}, node ${frozen} frozen)`, first: a.fence, last: a.fence + given - 1 });
        const said = { fence: a.fence, fences: given, answeredAt };
        spinUntil(answeredAt, Math.max(0, passedAfterUs(given) + ((i * 7) % 13) - 6));
        if (releaseArgs('x', said, performance.now())[1] === 'passed') passed++;
        const [released, b] = await Promise.all([first.release(key, `A${i}`, said), second.tryAcquire(key, `B${i}`, 30_000, 1)]);
        expect(released).toBe(true);
        if (b.acquired) {
          blocks.push({ who: `B${i}`, first: b.fence, last: b.fence });
          await second.release(key, `B${i}`, { fence: b.fence, fences: 1, answeredAt: performance.now() });
        } else refused++;
      } finally {
        if (frozen < 3) nodes.servers[frozen]!.resume();
        blind.close();
      }
      // the thawed node runs what was queued for it (late acquire, release, grant, release)
      await Promise.all(clients.map((client) => client.ping()));
    }
    learnt.close();
    expect(passed, "some releases said 'passed'").toBeGreaterThan(5);
    expect(refused, 'most grants beside a release land after it').toBeLessThan(45);
    expectIncreasing(blocks);
  });

  it('the engine: two lockers on two sets of connections, cohorts passing the lock locally, a node frozen and thawed now and then: fences strictly increase in the order holders got them, never two holders at once', async () => {
    const makeLocker = () => {
      const store = new RedlockStore(nodes.clients(), { nodeTimeout: 100 });
      const locker = createLocker({ store, keyPrefix: '', cohort: { maxPasses: 1000, maxMs: 60_000 } });
      return { store, locker };
    };
    const x = makeLocker();
    const y = makeLocker();
    await nodes.connected();
    const key = fresh('engine');
    const fences: number[] = [];
    let holding = 0;
    let overlaps = 0;
    let stop = false;
    const loop = async (locker: typeof x.locker, ttl: number) => {
      while (!stop) {
        const lease = await firstValueFrom(locker.acquire(key, { ttl, waitTimeout: 20_000 }));
        if (++holding > 1) overlaps++;
        fences.push(lease.fence);
        if (fences.length % 3 === 0) await Promise.resolve();
        else if (fences.length % 3 === 1) await sleep(0);
        holding--;
        await lease.release();
      }
    };
    const loops = [...[0, 1, 2].map(() => loop(x.locker, 5000)), ...[0, 1, 2].map(() => loop(y.locker, 5000)), loop(y.locker, 5001)];
    for (let k = 0; k < 6; k++) {
      await sleep(60);
      nodes.servers[k % 3]!.pause();
      await sleep(40);
      nodes.servers[k % 3]!.resume();
    }
    await sleep(60);
    stop = true;
    await Promise.all(loops);
    await x.locker.close();
    await y.locker.close();
    x.store.close();
    y.store.close();
    expect(overlaps).toBe(0);
    expect(fences.length).toBeGreaterThan(100);
    for (let i = 1; i < fences.length; i++) expect(fences[i], `holder ${i} vs holder ${i - 1}`).toBeGreaterThan(fences[i - 1]!);
  });
});
