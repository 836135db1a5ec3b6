/**
 * Attacks on the fences of grants the acquire script does not record (lua/lib/fences.lua,
 * recordBlock.lua, acquire-4.lua, release-4.lua): the common-path grant leaves its block to the
 * release, which records it from what the holder says of its grant (or assumes the most a grant
 * reserves), and hand-offs take the released block as a floor.
 *
 * Invariants asserted (each test fails when its attack succeeds):
 * - every fence issued for a key (without data loss) is strictly greater than every fence of every
 *   earlier grant of that key (the whole block first … first + fences − 1);
 * - a FencedResource never refuses a newer holder or accepts a stale one.
 *
 * Found by a review of the first version of that change, and fixed: a same-token grant sent twice
 * on the common path (and then in line) landed inside the first run's unrecorded block; extend to
 * 0 ms deleted the key (PEXPIRE 0) without recording its block; a release could push the counter
 * to 2^53 (every later fence equal and unsafe). Older, fixed too: a stale hand-off record in the
 * places hash, returned to the same token after a newer grant. Not a fault of the store: a caller
 * that says fewer fences than its grant got (see LockStore.release), and one Redis key reached
 * through two ioredis keyPrefix splits (two lines and two fence counters for one lock: README).
 *
 * Pipelined calls: the scripts are warmed first, so Promise.all of store calls on one connection
 * runs back to back on the server, well within one block (1,024 fences = 256 µs of clock).
 */
import { firstValueFrom, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { FencedResource } from '../../src/redis.js';
import type { AcquireResult, ReleasedGrant } from '../../src/store/LockStore.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { blockOf, expectIncreasing, storeOn, warmScripts, type Block } from '../support/fenceBlocks.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite({ args: ['--save', '', '--appendonly', 'no'] });

/** What a holder of `block` tells the store at its release: the grant, answered just now. */
function saying(block: Block, extra = 0): ReleasedGrant {
  return { fence: block.first, fences: block.last - block.first + 1 + extra, answeredAt: performance.now() };
}

describe('store calls, pipelined', () => {
  it('baseline: acquire 1024 / release (said, unsaid, said late) / acquire, back to back, 300 rounds', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'base';
    const blocks: Block[] = [];
    for (let i = 0; i < 300; i++) {
      const a = await store.tryAcquire(key, `A${i}`, 30_000, 1024);
      const ba = blockOf(`A${i}`, a, 1024);
      blocks.push(ba);
      const said = i % 3 === 0 ? undefined : i % 3 === 1 ? saying(ba) : saying(ba, 5);
      const [released, b] = await Promise.all([store.release(key, `A${i}`, said), store.tryAcquire(key, `B${i}`, 30_000, 1024)]);
      expect(released).toBe(true);
      const bb = blockOf(`B${i}`, b, 1024);
      blocks.push(bb);
      expect(await store.release(key, `B${i}`, saying(bb))).toBe(true);
    }
    expectIncreasing(blocks);
  });

  it('TTL expiry right after the grant (ttl 1-3 ms): the next grant is above the unrecorded block', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const blocks: Block[] = [];
    for (let i = 0; i < 30; i++) {
      const key = `ttl:${i}`;
      const ttl = 1 + (i % 3);
      blocks.length = 0;
      const a = await store.tryAcquire(key, 'A', ttl, 1024);
      blocks.push(blockOf('A', a, 1024));
      let b: AcquireResult;
      // spin with pipelined attempts until the key expired
      for (;;) {
        const tries = await Promise.all(Array.from({ length: 8 }, (_, j) => store.tryAcquire(key, `B${j}`, 30_000, 1024)));
        const won = tries.findIndex((t) => t.acquired);
        if (won >= 0) {
          b = tries[won]!;
          break;
        }
      }
      blocks.push(blockOf('B', b, 1024));
      expectIncreasing(blocks);
    }
  });

  it('a grant re-sent after a lost reply (same token twice, common path): the second grant is above the first block', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'resent';
    const [a1, a2] = await Promise.all([store.tryAcquire(key, 'A', 30_000, 1024), store.tryAcquire(key, 'A', 30_000, 1024)]);
    expectIncreasing([blockOf('A (1st run)', a1, 1024), blockOf('A (re-sent)', a2, 1024)]);
  });

  it('same token: a common-path grant, then the same token asks in line (keep)', async () => {
    const { store } = storeOn(suite);
    await warmScripts(store);
    const key = 'resent:line';
    const [a1, a2] = await Promise.all([store.tryAcquire(key, 'A', 30_000, 1024), store.tryAcquireInLine(key, 'A', 30_000, 1024, 'keep')]);
    expectIncreasing([blockOf('A (try)', a1, 1024), blockOf('A (in line)', a2, 1024)]);
  });

  it('extend to 0 ms (PEXPIRE 0 would delete the key without recording its block) is refused, by the store and by the script', async () => {
    const { store, redis } = storeOn(suite);
    await warmScripts(store);
    const key = 'extend0';
    const a = blockOf('A', await store.tryAcquire(key, 'A', 30_000, 1024), 1024);
    for (const ttl of [0, -1, 0.5, Number.NaN]) await expect(store.extend(key, 'A', ttl)).rejects.toMatchObject({ name: 'LockOptionsError', option: 'ttlMs' });
    await expect(redis.eval(luaScripts.extend.source, 1, key, 'A', 0)).rejects.toThrow(/at least 1 ms/);
    expect(await redis.pttl(key)).toBeGreaterThan(20_000);
    const [released, b] = await Promise.all([store.release(key, 'A', saying(a)), store.tryAcquire(key, 'B', 30_000, 1)]);
    expect(released).toBe(true);
    expectIncreasing([a, blockOf('B', b, 1)]);
  });

  it('a release that says its block ends at Number.MAX_SAFE_INTEGER (sent to the script itself): capped, later fences stay safe and increasing', async () => {
    const { store, redis } = storeOn(suite);
    await warmScripts(store);
    const key = 'said-max';
    const a = await store.tryAcquire(key, 'A', 30_000, 1);
    const blocks = [blockOf('A', a, 1)];
    expect(await redis.eval(luaScripts.release.source, 4, ...lockKeys(key), 'A', String(Number.MAX_SAFE_INTEGER))).toBe(1);
    expect(await redis.pttl(lockKeys(key)[1])).toBeLessThan(10); // at most a block ahead of the clock
    for (let i = 0; i < 3; i++) {
      const b = await store.tryAcquire(key, `B${i}`, 30_000, 1);
      const bb = blockOf(`B${i}`, b, 1);
      blocks.push(bb);
      await store.release(key, `B${i}`, saying(bb));
    }
    expectIncreasing(blocks);
  });

  it('hand-off: to a waiter whose place lapsed (none), to one that never claims (TTL 1 ms), unsaid releases', async () => {
    const { store } = storeOn(suite, { placeTtl: 100 });
    await warmScripts(store);
    const key = 'lapse';
    const blocks: Block[] = [];
    // A holds; W queues; W's place lapses; A's unsaid release deletes; B right behind.
    const a = await store.tryAcquire(key, 'A', 30_000, 1024);
    blocks.push(blockOf('A', a, 1024));
    expect(await store.tryAcquireInLine(key, 'W', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
    await sleep(120);
    const [, b] = await Promise.all([store.release(key, 'A'), store.tryAcquire(key, 'B', 30_000, 1024)]);
    blocks.push(blockOf('B', b, 1024));
    // B holds; V queues with ttl 1; B's unsaid release hands to V; V never claims; C takes it after.
    // (V and U queue through a store whose places last 3 s: a 100 ms place could lapse before the
    // release on a loaded machine, and there would be no hand-off to test.)
    const { store: patient } = storeOn(suite, { placeTtl: 3_000 });
    await warmScripts(patient);
    expect(await patient.tryAcquireInLine(key, 'V', 1, 1024, 'keep')).toMatchObject({ queued: true });
    // B's unsaid release and the read of the hand-off record in one transaction: the record lives
    // as long as V's 1 ms grant, so a separate read could find it gone on a loaded machine.
    const [, , , places] = lockKeys(key);
    const [[releaseError, released], [readError, record]] = (await suite.admin
      .multi()
      .eval(luaScripts.release.source, 4, ...lockKeys(key), 'B')
      .hget(places, 'grant')
      .exec())! as [[Error | null, unknown], [Error | null, string | null]];
    expect([releaseError, readError, released]).toEqual([null, null, 2]); // handed over to V
    const grant = record!.split(' ');
    blocks.push({ who: 'V (handed)', first: Number(grant[1]), last: Number(grant[1]) + Number(grant[2]) - 1 });
    let c: AcquireResult;
    do c = await store.tryAcquire(key, 'C', 30_000, 1024);
    while (!c.acquired);
    blocks.push(blockOf('C', c, 1024));
    // C releases with a line: a waiter U queued (with a lasting place, as V), release said, U claims by leave().
    expect(await patient.tryAcquireInLine(key, 'U', 30_000, 1024, 'keep')).toMatchObject({ queued: true });
    const cb = blocks.at(-1)!;
    expect(await store.release(key, 'C', saying(cb))).toBe(true);
    const left = await store.leave(key, 'U');
    if (!left.granted) throw new Error('U was not handed the key');
    blocks.push({ who: 'U (leave)', first: left.fence, last: left.fence + left.fences - 1 });
    await store.release(key, 'U', saying(blocks.at(-1)!));
    expectIncreasing(blocks);
  });

  it('a stale hand-off record (kept alive by a waiter that left): the same token asks in line after a newer common-path grant', async () => {
    const { store } = storeOn(suite, { placeTtl: 5000 });
    await warmScripts(store);
    const key = 'stale-record';
    const x = await store.tryAcquire(key, 'X', 30_000, 1);
    expect(await store.tryAcquireInLine(key, 'T', 2, 1, 'keep')).toMatchObject({ queued: true });
    expect(await store.tryAcquireInLine(key, 'U', 30_000, 1, 'keep')).toMatchObject({ queued: true });
    expect(await store.release(key, 'X', saying(blockOf('X', x, 1)))).toBe(true); // handed to T, for 2 ms
    expect(await store.leave(key, 'U')).toEqual({ granted: false }); // the line is gone, the places (and the record) stay
    const [, , , places] = lockKeys(key);
    const grant = (await suite.admin.hget(places, 'grant'))!.split(' ');
    const handed: Block = { who: 'T (handed, never claimed)', first: Number(grant[1]), last: Number(grant[1]) + Number(grant[2]) - 1 };
    await sleep(10); // T's hand-off lapses unclaimed
    const t2 = await store.tryAcquire(key, 'T', 30_000, 1); // common path: no line
    const t3 = await store.tryAcquireInLine(key, 'T', 30_000, 1, 'keep'); // same token asks again
    expectIncreasing([handed, blockOf('T (common path)', t2, 1), blockOf('T (asks in line)', t3, 1)]);
  });
});

describe('the engine: two lockers on two connections', () => {
  it('cohorts, concurrent acquisitions, cancellations, waitTimeout 0: acquired fences strictly increase per key and every holder write is accepted', async () => {
    const log: Array<LockEvent & { by: string }> = [];
    const lockers = ['L1', 'L2'].map((name, i) => {
      const { store } = storeOn(suite);
      const locker = createLocker({
        store,
        keyPrefix: '',
        ttl: 2000,
        cohort: i === 0 ? { maxPasses: 1023, maxMs: 40 } : { maxPasses: 5, maxMs: 5 },
        retry: { minDelay: 0, jitter: 2 },
      });
      locker.events$.subscribe((e) => log.push({ ...e, by: name }));
      suite.closers.push(() => locker.close());
      return locker;
    });
    const resourceClient = connect(suite.server);
    suite.closers.push(() => resourceClient.disconnect());
    const keys = ['e:a', 'e:{t}b'];
    const resources = new Map(keys.map((k) => [k, new FencedResource(resourceClient, `res:${k}`)]));
    const refused: string[] = [];
    const deadline = performance.now() + 6000;
    let seq = 0;
    const worker = async (w: number) => {
      while (performance.now() < deadline) {
        const locker = lockers[w % 2]!;
        const key = keys[seq++ % keys.length]!;
        const roll = Math.random();
        if (roll < 0.15) {
          // cancelled mid-acquire
          const sub: Subscription = locker.acquire(key, { ttl: 2000 + (w % 3) }).subscribe({ next: (l) => void l.release(), error: () => undefined });
          await sleep(Math.floor(Math.random() * 3));
          sub.unsubscribe();
          continue;
        }
        const options = roll < 0.3 ? { waitTimeout: 0 } : { ttl: 2000 + (roll < 0.6 ? 0 : w % 3), waitTimeout: 5000 };
        let lease;
        try {
          lease = await firstValueFrom(locker.acquire(key, options));
        } catch {
          continue;
        }
        const written = await resources.get(key)!.write(lease.fence, `${w}`);
        if (!written.accepted) refused.push(`${key}: fence ${lease.fence} refused, highest ${written.highestFence}`);
        if (Math.random() < 0.5) await sleep(0);
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: 12 }, (_, w) => worker(w)));
    await Promise.all(lockers.map((l) => l.close()));
    expect(refused).toEqual([]);
    for (const key of keys) {
      const fences = log.flatMap((e) => (e.type === 'acquired' && e.key === key ? [{ fence: e.fence, by: e.by }] : []));
      expect(fences.length).toBeGreaterThan(50);
      for (let i = 1; i < fences.length; i++) {
        expect(fences[i]!.fence, `${key}: acquisition ${i} (${fences[i]!.by}) vs ${i - 1} (${fences[i - 1]!.by})`).toBeGreaterThan(fences[i - 1]!.fence);
      }
    }
  }, 20_000);
});
