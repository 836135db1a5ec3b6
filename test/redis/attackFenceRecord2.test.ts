/**
 * A second attack suite on the fences of grants the acquire script does not record (fb6dead,
 * 91551c0): the 'passed' release (codec.ts releaseArgs, release-4.lua), the common path that
 * needs line, places and counter all absent (acquire-4.lua), and the general path it falls back to.
 *
 * Invariants asserted (each test fails when its attack succeeds):
 * - every fence issued for a key (without data loss) is strictly greater than every fence of every
 *   earlier grant of that key (the whole block first … first + fences − 1);
 * - every fence and every fence count answered is a safe integer, counts from 1 to 1,024;
 * - a FencedResource never refuses a holder that acquired after the highest writer did.
 *
 * Releases say their grant exactly as the engine does: `answeredAt` is read right after the
 * grant's answer reached the caller, so 'passed' is sent only when codec.ts's rule allows it.
 */
import { firstValueFrom, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { FencedResource, RedisLockStore } from '../../src/redis.js';
import type { AcquireResult, LockStore, ReleasedGrant } from '../../src/store/LockStore.js';
import { coreOnly } from '../../src/store/capabilities.js';
import { passedAfterUs, releaseArgs } from '../../src/backends/redis/protocol/codec.js';
import { lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { blockOf, expectIncreasing, storeOn, warmScripts, type Block, seedOf } from '../support/fenceBlocks.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'] });

/** A grant with its answer time, taken the moment the answer is seen (as KeyGate.won does). */
async function grant(p: Promise<AcquireResult>, who: string, asked: number): Promise<{ block: Block; said: ReleasedGrant; r: AcquireResult }> {
  const r = await p;
  const answeredAt = performance.now();
  const block = blockOf(who, r, asked);
  return { block, r, said: { fence: block.first, fences: block.last - block.first + 1, answeredAt } };
}

/** Spins until `us` microseconds passed since `since` (performance.now()). */
function spinUntil(since: number, us: number): void {
  while ((performance.now() - since) * 1000 < us) {
    // busy
  }
}

/** The µs after which codec.ts says 'passed' for a block of `fences`. */
const threshold = passedAfterUs;

describe("'passed' at the edge of the rule", () => {
  it("common-path grant, release right at the 'passed' threshold (±), next grant pipelined behind: above the block (fences 1, 4, 5, 16, 1024 — 4 is the most one µs of the clock spans, 5 the least that spans two; 600 rounds)", async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'edge';
    const blocks: Block[] = [];
    let passedCount = 0;
    for (let i = 0; i < 600; i++) {
      const n = [1, 4, 5, 16, 1024][i % 5]!;
      const a = await grant(store.tryAcquire(key, `A${i}`, 30_000, n), `A${i}`, n);
      blocks.push(a.block);
      // just below / at / just above the threshold
      const wait = threshold(n) + ((i * 7) % 13) - 6;
      spinUntil(a.said.answeredAt, Math.max(0, wait));
      if (releaseArgs('x', a.said, performance.now())[1] === 'passed') passedCount++;
      const [released, b] = await Promise.all([store.release(key, `A${i}`, a.said), store.tryAcquire(key, `B${i}`, 30_000, 1024)]);
      expect(released).toBe(true);
      const bb = await grant(Promise.resolve(b), `B${i}`, 1024);
      blocks.push(bb.block);
      // B releases at once (says its block): the next round's A is pipelined behind nothing, but
      // the counter B's release records must keep A above B's block.
      expect(await store.release(key, `B${i}`, bb.said)).toBe(true);
    }
    expect(passedCount, "some releases said 'passed'").toBeGreaterThan(50);
    expectIncreasing(blocks);
  });

  it("common-path holder, a waiter queues, holder releases 'passed' (hand-off with floor 0): the waiter's fence is above the holder's block; then the waiter releases 'passed' to a second waiter", async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    for (let i = 0; i < 60; i++) {
      const key = `handoff-passed:${i}`;
      const n = i % 2 === 0 ? 1024 : 1;
      const a = await grant(store.tryAcquire(key, 'A', 30_000, n), 'A', n);
      expect(await store.tryAcquireInLine(key, 'W1', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
      expect(await store.tryAcquireInLine(key, 'W2', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
      spinUntil(a.said.answeredAt, threshold(n) + 1);
      expect(releaseArgs('A', a.said, performance.now())[1]).toBe('passed');
      // released and W's claim back to back
      const [handed, wr] = await Promise.all([store.release(key, 'A', a.said), store.tryAcquireInLine(key, 'W1', 30_000, 1024, 'keep')]);
      expect(handed).toBe(true);
      const w = await grant(Promise.resolve(wr), 'W1 (handed)', 1024);
      spinUntil(w.said.answeredAt, threshold(w.said.fences) + 1);
      const [handed2, vr] = await Promise.all([store.release(key, 'W1', w.said), store.tryAcquireInLine(key, 'W2', 30_000, 1024, 'keep')]);
      expect(handed2).toBe(true);
      const v = await grant(Promise.resolve(vr), 'W2 (handed)', 1024);
      // V releases at once, said; X's common-path attempt right behind
      const [, xr] = await Promise.all([store.release(key, 'W2', v.said), store.tryAcquire(key, 'X', 30_000, 1024)]);
      const x = await grant(Promise.resolve(xr), 'X', 1024);
      expectIncreasing([a.block, w.block, v.block, x.block]);
      await store.release(key, 'X', x.said);
    }
  });

  it("a hand-off block that leads the clock (the counter ahead: unsaid release before it), released 'passed' by the rule: the next grant stays above it", async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    for (let i = 0; i < 40; i++) {
      const key = `lead:${i}`;
      const a = await grant(store.tryAcquire(key, 'A', 30_000, 1024), 'A', 1024);
      expect(await store.tryAcquireInLine(key, 'W', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
      // unsaid: floor = clock + 1,024, so W's block starts ahead of the clock, with fewer fences
      const [, wr] = await Promise.all([store.release(key, 'A'), store.tryAcquireInLine(key, 'W', 30_000, 1024, 'keep')]);
      const w = await grant(Promise.resolve(wr), 'W', 1024);
      spinUntil(w.said.answeredAt, threshold(w.said.fences) + 1);
      expect(releaseArgs('W', w.said, performance.now())[1]).toBe('passed');
      // W's release 'passed' (no line): nothing recorded, the counter must still hold W's block
      const [, br, , cr] = await Promise.all([
        store.release(key, 'W', w.said),
        store.tryAcquire(key, 'B', 30_000, 1024),
        store.release(key, 'B'),
        store.tryAcquire(key, 'C', 30_000, 1024),
      ]);
      const b = blockOf('B', br, 1024);
      const c = blockOf('C', cr, 1024);
      expectIncreasing([a.block, w.block, b, c]);
      await store.release(key, 'C');
    }
  });
});

describe('common path vs general path', () => {
  /** The fence seed of the server clock now. */
  const seedNow = () => seedOf(suite.admin);

  it('places without a line (a ghost place, a stale grant record), a counter ahead, a bare line: each sends the grant down the general path, above every block', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const admin = suite.admin;
    const setups: Array<[string, (keys: string[]) => Promise<unknown>]> = [
      ['ghost place', ([, , , places]) => admin.hset(places!, 'w:ghost', `${Date.now() + 60_000} 30000 1024 3000 `)],
      ['stale grant record for B', ([, , , places]) => admin.hset(places!, 'grant', 'B 5 1')],
      ['stale grant record for A', ([, , , places]) => admin.hset(places!, 'grant', 'A 5 1')],
      ['counter ahead by 1024', async ([, fence]) => admin.set(fence!, String((await seedNow()) + 1024), 'PX', 50)],
      ['counter ahead by 100000', async ([, fence]) => admin.set(fence!, String((await seedNow()) + 100_000), 'PX', 50)],
      ['bare line, lapsed member', ([, , line]) => admin.zadd(line!, 1, 'dead')],
    ];
    for (const [name, setup] of setups) {
      for (const sayPassed of [true, false]) {
        const key = `paths:${name}:${sayPassed}`;
        const keys = [...lockKeys(key)];
        await setup(keys);
        const counter = Number((await admin.get(keys[1]!)) ?? 0);
        const blocks: Block[] = counter > 0 ? [{ who: 'counter', first: counter, last: counter }] : [];
        const a = await grant(store.tryAcquire(key, 'A', 30_000, 1024), `A (${name})`, 1024);
        blocks.push(a.block);
        const a2 = await grant(store.tryAcquire(key, 'A', 30_000, 1024), `A again (${name})`, 1024); // same token re-sent
        blocks.push(a2.block);
        if (sayPassed) spinUntil(a2.said.answeredAt, threshold(1024) + 1);
        const [, br] = await Promise.all([store.release(key, 'A', a2.said), store.tryAcquire(key, 'B', 30_000, 1024)]);
        const b = await grant(Promise.resolve(br), `B (${name})`, 1024);
        blocks.push(b.block);
        const [, cr] = await Promise.all([store.release(key, 'B', b.said), store.tryAcquireInLine(key, 'C', 30_000, 1024, 'keep')]);
        blocks.push(blockOf(`C (${name})`, cr, 1024));
        await store.release(key, 'C');
        expectIncreasing(blocks);
      }
    }
  });

  it("a line created while a common-path holder holds, the waiter gives up (leave), the holder releases 'passed' to nobody: next common-path grant above", async () => {
    const { store } = storeOn(suite, { placeTtl: 100 });
    await warmScripts(store);
    for (let i = 0; i < 40; i++) {
      const key = `line-mid:${i}`;
      const a = await grant(store.tryAcquire(key, 'A', 30_000, 1024), 'A', 1024);
      expect(await store.tryAcquireInLine(key, 'W', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
      if (i % 2 === 0) expect(await store.leave(key, 'W')).toEqual({ granted: false });
      else expect(await store.tryAcquireInLine(key, 'W', 30_000, 1024, 'leave')).toMatchObject({ acquired: false });
      spinUntil(a.said.answeredAt, threshold(1024) + 1);
      const [, br] = await Promise.all([store.release(key, 'A', a.said), store.tryAcquire(key, 'B', 30_000, 1024)]);
      expectIncreasing([a.block, blockOf('B', br, 1024)]);
      await store.release(key, 'B');
    }
  });
});

describe('odd fence counts through the store API', () => {
  const odd = [
    0,
    -1,
    -1024,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    0.5,
    1.5,
    1023.5,
    1025,
    2047,
    4096,
    2 ** 31,
    Number.MAX_SAFE_INTEGER,
    1e300,
  ];

  it('tryAcquire on the common path: a safe fence and 1 to 1,024 fences, and the next grant above them', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const problems: string[] = [];
    for (const n of odd) {
      const key = `odd:common:${n}`;
      if (!(Number.isSafeInteger(n) && n >= 1)) {
        // refused at once, with nothing taken
        await expect(store.tryAcquire(key, 'A', 30_000, n), `fences ${n}`).rejects.toMatchObject({ name: 'LockOptionsError', option: 'fences' });
        expect(await suite.admin.exists(key)).toBe(0);
        continue;
      }
      const r = await store.tryAcquire(key, 'A', 30_000, n);
      expect(r.acquired, `fences ${n}`).toBe(true);
      if (!r.acquired) continue;
      const count = r.fences ?? n;
      expect(Number.isSafeInteger(r.fence), `fence for ${n}`).toBe(true);
      if (!(Number.isSafeInteger(count) && count >= 1 && count <= 1024))
        problems.push(`asked ${n}: ${r.fences === undefined ? 'bare reply' : 'table reply'}, count ${count}`);
      const a: Block = { who: `A (asked ${n})`, first: r.fence, last: r.fence + Math.max(1, Math.floor(Number.isFinite(count) ? count : 1)) - 1 };
      const said: ReleasedGrant = { fence: r.fence, fences: count, answeredAt: performance.now() };
      const [, br] = await Promise.all([store.release(key, 'A', said), store.tryAcquire(key, 'B', 30_000, 1024)]);
      expectIncreasing([a, blockOf('B', br, 1024)]);
    }
    expect(problems).toEqual([]);
  });

  it('tryAcquire and tryAcquireInLine on the general path (a counter beside the key): a safe fence and count, or a refusal that leaves the key free', async () => {
    const { store, redis } = storeOn(suite);
    await warmScripts(store);
    const problems: string[] = [];
    for (const n of odd) {
      for (const mode of ['try', 'keep'] as const) {
        const key = `odd:general:${mode}:${n}`;
        // a counter beside the key: the general path
        const x = await store.tryAcquire(key, 'X', 30_000, 1024);
        await store.release(key, 'X'); // unsaid: records clock + 1,024
        const call = mode === 'try' ? store.tryAcquire(key, 'A', 30_000, n) : store.tryAcquireInLine(key, 'A', 30_000, n, 'keep');
        let r: AcquireResult | undefined;
        try {
          r = await call;
        } catch (error) {
          const holder = await redis.get(key);
          if (holder !== null)
            problems.push(
              `${mode} fences ${n}: rejected (${(error as Error).message.split('\n')[0]}) but the key is held by ${holder} for ${await redis.pttl(key)} ms`,
            );
          await redis.del(key);
          continue;
        }
        if (!r.acquired) continue;
        const count = r.fences ?? n;
        if (!Number.isSafeInteger(r.fence) || !Number.isSafeInteger(count) || count < 1 || count > 1024)
          problems.push(`${mode} fences ${n}: fence ${r.fence}, count ${count}`);
        const [, br] = await Promise.all([
          store.release(key, 'A', { fence: r.fence, fences: count, answeredAt: performance.now() }),
          store.tryAcquire(key, 'B', 30_000, 1024),
        ]);
        try {
          expectIncreasing([blockOf('X', x, 1024), { who: `A (${mode}, asked ${n})`, first: r.fence, last: r.fence + count - 1 }, blockOf('B', br, 1024)]);
        } catch (error) {
          problems.push(`${mode} fences ${n}: ${(error as Error).message.split('\n')[0]}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('a waiter in line asking odd counts is handed fences above the released block (or loses its place), never an overlap', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    for (const n of odd) {
      const key = `odd:line:${n}`;
      const a = await grant(store.tryAcquire(key, 'A', 30_000, 1024), 'A', 1024);
      let queued: AcquireResult;
      try {
        queued = await store.tryAcquireInLine(key, 'W', 30_000, n, 'keep');
      } catch {
        continue;
      }
      expect(queued.acquired).toBe(false);
      const [, wr] = await Promise.all([store.release(key, 'A', a.said), store.tryAcquireInLine(key, 'W', 30_000, 1, 'keep')]);
      if (!wr.acquired) continue; // its place was not kept
      const count = wr.fences ?? 1;
      expect(Number.isSafeInteger(count) && count >= 1 && count <= 1024, `count ${count} for asked ${n}`).toBe(true);
      const w: Block = { who: `W (asked ${n})`, first: wr.fence, last: wr.fence + count - 1 };
      const [, br] = await Promise.all([
        store.release(key, 'W', { fence: wr.fence, fences: count, answeredAt: performance.now() }),
        store.tryAcquire(key, 'B', 30_000, 1024),
      ]);
      expectIncreasing([a.block, w, blockOf('B', br, 1024)]);
    }
  });
});

describe('the same token twice', () => {
  it('try, keep, leave, try with one token, pipelined, on a free key and on a key with a counter: each new block above the last', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    for (const counterFirst of [false, true]) {
      const key = `same:${counterFirst}`;
      if (counterFirst) {
        await store.tryAcquire(key, 'X', 30_000, 1);
        await store.release(key, 'X');
      }
      const rs = await Promise.all([
        store.tryAcquire(key, 'A', 30_000, 1024),
        store.tryAcquireInLine(key, 'A', 30_000, 1024, 'keep'),
        store.tryAcquireInLine(key, 'A', 30_000, 1024, 'leave'),
        store.tryAcquire(key, 'A', 30_000, 7),
      ]);
      const blocks = rs.map((r, i) => blockOf(`A run ${i}`, r, i === 3 ? 7 : 1024));
      const [, br] = await Promise.all([
        store.release(key, 'A', { fence: blocks[3]!.first, fences: blocks[3]!.last - blocks[3]!.first + 1, answeredAt: performance.now() }),
        store.tryAcquire(key, 'B', 30_000, 1),
      ]);
      blocks.push(blockOf('B', br, 1));
      expectIncreasing(blocks);
      await store.release(key, 'B');
    }
  });

  it('a hand-off asked for again by its grantee (try, keep, leave) answers the same recorded grant, and the next holder is above it', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'same:handoff';
    const a = await grant(store.tryAcquire(key, 'A', 30_000, 1024), 'A', 1024);
    expect(await store.tryAcquireInLine(key, 'W', 30_000, 64, 'keep')).toMatchObject({ queued: true });
    spinUntil(a.said.answeredAt, threshold(1024) + 1);
    expect(await store.release(key, 'A', a.said)).toBe(true);
    const [t, k, l] = await Promise.all([store.tryAcquire(key, 'W', 30_000, 64), store.tryAcquireInLine(key, 'W', 30_000, 64, 'keep'), store.leave(key, 'W')]);
    const wt = blockOf('W (try)', t, 64);
    const wk = blockOf('W (keep)', k, 64);
    if (!l.granted) throw new Error('W not granted by leave');
    expect(wk.first).toBe(wt.first);
    expect(l.fence).toBe(wt.first);
    // the latest answer's time, 'passed' by the rule
    const said: ReleasedGrant = { fence: wt.first, fences: wt.last - wt.first + 1, answeredAt: performance.now() };
    spinUntil(said.answeredAt, threshold(said.fences) + 1);
    const [, br] = await Promise.all([store.release(key, 'W', said), store.tryAcquire(key, 'B', 30_000, 1024)]);
    expectIncreasing([a.block, wt, blockOf('B', br, 1024)]);
  });
});

describe('TTL 1 ms', () => {
  let spins = 0;
  async function spinTake(store: RedisLockStore, key: string, fences: number): Promise<AcquireResult> {
    const round = spins++;
    const deadline = performance.now() + 2000;
    while (performance.now() < deadline) {
      const tries = await Promise.all(
        Array.from({ length: 6 }, (_, j) =>
          j % 2 === 0 ? store.tryAcquire(key, `S${round}.${j}`, 30_000, fences) : store.tryAcquireInLine(key, `S${round}.${j}`, 30_000, fences, 'keep'),
        ),
      );
      const won = tries.filter((t) => t.acquired);
      if (won.length > 1) throw new Error('two grants at once');
      if (won.length === 1) return won[0]!;
    }
    throw new Error('never free');
  }

  it('common-path grant with TTL 1 ms, then a hand-off with TTL 1 ms, then extend to 1 ms: each regrant right after expiry is above', async () => {
    const { store } = storeOn(suite, { placeTtl: 100 });
    await warmScripts(store);
    for (let i = 0; i < 15; i++) {
      const key = `ttl1:${i}`;
      const blocks: Block[] = [];
      // common path, TTL 1
      blocks.push(blockOf('A (ttl 1)', await store.tryAcquire(key, 'A', 1, 1024), 1024));
      let s = await spinTake(store, key, 1024);
      blocks.push(blockOf('S after A', s, 1024));
      // hand-off with TTL 1: the holder S releases (said) to W that asked ttl 1
      const holder = (await suiteHolder(key))!;
      expect(await store.tryAcquireInLine(key, 'W', 1, 1024, 'keep')).toMatchObject({ queued: true });
      expect(
        await store.release(key, holder, {
          fence: blocks.at(-1)!.first,
          fences: blocks.at(-1)!.last - blocks.at(-1)!.first + 1,
          answeredAt: performance.now(),
        }),
      ).toBe(true);
      const [, , , places] = lockKeys(key);
      const g = (await suite.admin.hget(places, 'grant'))?.split(' ');
      if (g !== undefined)
        blocks.push({ who: `${g[0]} (handed, ttl ${g[0] === 'W' ? 1 : 30_000})`, first: Number(g[1]), last: Number(g[1]) + Number(g[2]) - 1 });
      // (a waiter left in line by the spin may be ahead of W: then it is handed the key, and the
      // next spin must first let its 30 s grant go: release it as its holder would)
      if (g !== undefined && g[0] !== 'W') expect(await store.release(key, g[0]!)).toBe(true);
      s = await spinTake(store, key, 1024);
      blocks.push(blockOf('S after W', s, 1024));
      // extend to 1 ms, then expiry
      const holder2 = (await suiteHolder(key))!;
      expect(await store.extend(key, holder2, 1)).toBe('extended');
      s = await spinTake(store, key, 1024);
      blocks.push(blockOf('S after extend 1', s, 1024));
      expectIncreasing(blocks);
    }
  });

  async function suiteHolder(key: string): Promise<string | null> {
    return suite.admin.get(key);
  }
});

describe('the engine: three lockers on three connections (one core-only), hammering two keys', () => {
  it("big and small cohorts, mixed TTLs, cancellations, waitTimeout 0, releases near the 'passed' threshold: acquired fences strictly increase per key, no newer holder refused", async () => {
    const log: Array<LockEvent & { by: string }> = [];
    const configs: Array<{ name: string; core: boolean; cohort: { maxPasses: number; maxMs: number; roundMs: number } | false }> = [
      { name: 'L1', core: false, cohort: { maxPasses: 1023, maxMs: 50, roundMs: 100 } },
      { name: 'L2', core: false, cohort: { maxPasses: 3, maxMs: 2, roundMs: 4 } },
      { name: 'L3', core: true, cohort: { maxPasses: 1023, maxMs: 50, roundMs: 100 } },
    ];
    const seen = { passed: 0, said: 0, unsaid: 0, leaveGranted: 0 };
    const lockers = configs.map(({ name, core, cohort }) => {
      const { store } = storeOn(suite, { placeTtl: 300 });
      // count what the releases say, and the grants taken by leave()
      const release = store.release.bind(store);
      store.release = (key, token, g) => {
        const said = releaseArgs(token, g, performance.now())[1];
        if (said === 'passed') seen.passed++;
        else if (said === undefined) seen.unsaid++;
        else seen.said++;
        return release(key, token, g);
      };
      const leave = store.leave.bind(store);
      store.leave = async (key, token) => {
        const left = await leave(key, token);
        if (left.granted) seen.leaveGranted++;
        return left;
      };
      const s: LockStore = core ? coreOnly(store) : store;
      const locker = createLocker({ store: s, keyPrefix: '', ttl: 2000, cohort, retry: { minDelay: 0, jitter: 2 } });
      locker.events$.subscribe((e) => log.push({ ...e, by: name }));
      suite.closers.push(() => locker.close());
      return locker;
    });
    const resourceClient = connect(suite.server);
    suite.closers.push(() => resourceClient.disconnect());
    const keys = ['h:a', 'h:{t}b'];
    const resources = new Map(keys.map((k) => [k, new FencedResource(resourceClient, `res2:${k}`)]));
    const refused: Array<{ key: string; fence: number; highest: number }> = [];
    const deadline = performance.now() + 7000;
    let seq = 0;
    const worker = async (w: number) => {
      while (performance.now() < deadline) {
        const locker = lockers[w % lockers.length]!;
        const key = keys[seq++ % keys.length]!;
        const roll = Math.random();
        if (roll < 0.12) {
          const sub: Subscription = locker.acquire(key, { ttl: 2000 + (w % 4) }).subscribe({ next: (l) => void l.release(), error: () => undefined });
          await sleep(Math.floor(Math.random() * 3));
          sub.unsubscribe();
          continue;
        }
        // waitTimeout 0; a short wait that ends in line (the last attempt leaves the line, and may
        // take a hand-off by leave()); or a long one, with mixed TTLs
        const options =
          roll < 0.2
            ? { waitTimeout: 0 }
            : roll < 0.35
              ? { waitTimeout: 1 + Math.floor(Math.random() * 15) }
              : { ttl: roll < 0.6 ? 2000 : 2000 + (w % 4), waitTimeout: 5000 };
        let lease;
        try {
          lease = await firstValueFrom(locker.acquire(key, options));
        } catch {
          continue;
        }
        const got = performance.now();
        const written = await resources.get(key)!.write(lease.fence, `${w}`);
        if (!written.accepted) refused.push({ key, fence: lease.fence, highest: written.highestFence });
        // release near the 'passed' thresholds (5 µs for 16 fences, 257 µs for 1,024), or at once
        const r = Math.random();
        if (r < 0.3) spinUntil(got, Math.random() * 300);
        else if (r < 0.4) await sleep(0);
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: 15 }, (_, w) => worker(w)));
    await Promise.all(lockers.map((l) => l.close()));
    for (const key of keys) {
      const acquired = log.flatMap((e) => (e.type === 'acquired' && e.key === key ? [{ fence: e.fence, by: e.by, passed: e.passed }] : []));
      expect(acquired.length).toBeGreaterThan(100);
      const order = new Map(acquired.map((a, i) => [a.fence, i]));
      for (const r of refused.filter((x) => x.key === key)) {
        expect(order.get(r.fence)! < order.get(r.highest)!, `${key}: fence ${r.fence} refused after ${r.highest} wrote: ${r.fence} acquired later`).toBe(true);
      }
      for (let i = 1; i < acquired.length; i++) {
        expect(acquired[i]!.fence, `${key}: acquisition ${i} (${acquired[i]!.by}) vs ${i - 1} (${acquired[i - 1]!.by})`).toBeGreaterThan(
          acquired[i - 1]!.fence,
        );
      }
    }
    expect(refused).toEqual([]);
    console.info(`attackFenceRecord2 engine: releases ${JSON.stringify(seen)}`);
    // (how many say 'passed' and how many the end depends on the machine's speed and load)
    expect(seen.passed + seen.said).toBeGreaterThan(40);
  }, 25_000);
});
