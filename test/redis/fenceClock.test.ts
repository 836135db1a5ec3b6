/**
 * Issue #10, fences when Redis loses data, where the fence counter runs ahead of the server clock.
 *
 * The Redis store seeds fences from the server clock (4 per µs since 2025) and keeps a counter
 * beside the key only until the clock catches up with it (lua/lib/fences.lua). A fence issued
 * after the counter is lost (restart, FLUSHALL, eviction, failover) is therefore above every fence
 * before — as long as the counter is not ahead of the clock when it is lost. Every grant reserves
 * a block (`cohort.maxPasses + 1` fences when local waiters are in line), so the counter is ahead
 * of the clock after every grant, and a key granted more than 4,000 fences a millisecond pulls it
 * further ahead with every grant.
 *
 * The engine does that by itself on a hot key: a locker with `cohort: { maxPasses: 1000 }` whose
 * concurrent acquisitions ask for different TTLs (so no local hand-off is possible: a pass needs
 * the same lease) reserves 1,001 fences per store grant and uses one; at 4 grants a millisecond,
 * which a local Redis sustains, the counter runs ahead of the clock by tens to hundreds of ms
 * within seconds. Losing the data then sends fences backwards: the next holder's fence is below
 * fences already issued, and a FencedResource refuses the new holder while it accepts the old one.
 *
 * That was the fault (before the counter's lead was bounded): the README made it a proviso ("no
 * key reserves fences faster than 4,000 a millisecond"), but nothing kept to it.
 *
 * The first tests drive such a hot key for 1.5 s, check that the counter never led the clock by
 * more than one block (a grant takes fewer fences when the counter is ahead; lua/lib/fences.lua),
 * then lose the data and take the key anew: the new holder's fence is above every fence issued.
 * The next test is the window after a single grant, shown deterministically with commands Redis
 * runs back to back; the last ones, the grants whose block the acquire does not record.
 */
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { FencedResource, RedisLockStore } from '../../src/redis.js';
import type { AcquireResult, ReleasedGrant } from '../../src/store/LockStore.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { BIG_COHORT, dataLossServers } from '../support/dataLossServers.js';
import type { EmbeddedRedis } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';
import { RecordingStore } from '../support/recordingStore.js';
import { createLocker } from '../../src/index.js';
import { seedOf } from '../support/fenceBlocks.js';

/** Concurrent acquisitions of the hot key, each with its own TTL. */
const LOOPS = 8;

const servers = dataLossServers();
const { client, opened } = servers;

/** A locker on `server` (keyPrefix ''), closed after the last test. */
const newLocker = (server: EmbeddedRedis, cohort?: typeof BIG_COHORT) => servers.newProcess(server, { cohort, keyPrefix: '' });

/** How far the fence counter of `key` is ahead of the server clock, in ms (0 when it is not). */
async function counterLeadMs(admin: Redis, key: string): Promise<number> {
  const [counter, seed] = await Promise.all([admin.get(helperKey(key, 'fence')), seedOf(admin)]);
  return counter === null ? 0 : Math.max(0, (Number(counter) - seed) / 4000);
}

/** How long a hot phase runs. */
const HOT_MS = 1_500;
/** The most the counter may lead the server clock: one block of 1,024 fences (+1), in ms. */
const MAX_LEAD_MS = 1025 / 4000;

/**
 * Keeps `key` hot (LOOPS acquisitions with TTLs 5000, 5001, …, each released at once) for HOT_MS,
 * sampling how far the fence counter leads the server clock. Returns every fence issued and the
 * largest lead seen, which must stay within one block (lua/lib/fences.lua): before the fix it grew
 * by a block with every grant, to tens or hundreds of ms within seconds.
 */
async function hotPhase(server: EmbeddedRedis, key: string): Promise<{ fences: number[]; lead: number }> {
  const admin = client(server);
  const { locker, events } = newLocker(server, BIG_COHORT);
  let stop = false;
  const loop = async (ttl: number) => {
    while (!stop) {
      const lease = await firstValueFrom(locker.acquire(key, { ttl, waitTimeout: 20_000 }));
      await lease.release();
    }
  };
  const loops = Array.from({ length: LOOPS }, (_, i) => loop(5000 + i));
  const deadline = performance.now() + HOT_MS;
  let lead = 0;
  while (performance.now() < deadline) {
    await sleep(5);
    lead = Math.max(lead, await counterLeadMs(admin, key));
  }
  stop = true;
  await Promise.all(loops);
  lead = Math.max(lead, await counterLeadMs(admin, key));
  const fences = events.flatMap((e) => (e.type === 'acquired' ? [e.fence] : []));
  expect(fences.length, 'grants in the hot phase').toBeGreaterThan(100);
  expect(lead, "the fence counter's lead over the server clock, ms").toBeLessThanOrEqual(MAX_LEAD_MS);
  return { fences, lead };
}

/** Takes `key` on `server` as a new process, writes to a FencedResource the old holders wrote to, and checks the fences. */
async function newHolderAfterLoss(server: EmbeddedRedis, key: string, issued: number[]): Promise<void> {
  const resource = new FencedResource(client(servers.resourceServer), `resource:${key}`);
  const highest = Math.max(...issued);
  // The last holder before the loss wrote with the highest fence issued.
  expect(await resource.write(highest, 'old holder')).toMatchObject({ accepted: true });
  const { locker } = newLocker(server);
  const lease = await firstValueFrom(locker.acquire(key, { waitTimeout: 10_000 }));
  const behind = (highest - lease.fence) / 4000;
  expect(lease.fence, `the new holder's fence is ${behind.toFixed(1)} ms of clock below the highest fence issued before`).toBeGreaterThan(highest);
  expect(await resource.write(lease.fence, 'new holder')).toEqual({ accepted: true, fence: lease.fence });
  expect(await lease.release()).toBe(true);
}

describe('fences after data loss right after a hot phase (the counter never more than one block ahead of the clock)', () => {
  it('FLUSHALL', async () => {
    const key = 'hot:flushall';
    const { fences } = await hotPhase(servers.lockServer, key);
    await client(servers.lockServer).flushall();
    await newHolderAfterLoss(servers.lockServer, key, fences);
  });

  it('a restart without persistence', async () => {
    const key = 'hot:restart';
    const { fences } = await hotPhase(servers.lockServer, key);
    await servers.lockServer.kill();
    await servers.lockServer.restart();
    await newHolderAfterLoss(servers.lockServer, key, fences);
  });

  it('a failover to a replica that missed the last writes', async () => {
    const key = 'hot:failover';
    const link = client(servers.replica);
    await eventually(async () => /master_link_status:up/.test(await link.info('replication')), 10_000, 50);
    // The replica has the key's history up to here, then misses the hot phase.
    const { locker } = newLocker(servers.primary);
    const before = await firstValueFrom(locker.acquire(key));
    await before.release();
    expect(await client(servers.primary).call('WAIT', '1', '5000')).toBe(1);
    await link.call('REPLICAOF', 'NO', 'ONE');
    const { fences } = await hotPhase(servers.primary, key);
    await newHolderAfterLoss(servers.replica, key, [before.fence, ...fences]);
  });

  it('eviction of the fence counter under allkeys-lru', async () => {
    const key = 'hot:eviction';
    const admin = client(servers.evictServer);
    const { fences } = await hotPhase(servers.evictServer, key);
    const counter = helperKey(key, 'fence');
    const alive = await admin.pttl(counter);
    // Fill the server until the counter (alive for `alive` ms more) is evicted.
    const junk = 'x'.repeat(4096);
    let written = 0;
    const started = performance.now();
    while ((await admin.exists(counter)) === 1 && performance.now() - started < alive) {
      const pipeline = admin.pipeline();
      for (let i = 0; i < 100; i++) pipeline.set(`junk:${written++}`, junk);
      await pipeline.exec();
    }
    const evictedAlive = (await admin.exists(counter)) === 0 && performance.now() - started < alive;
    if (alive >= 50) expect(evictedAlive, `the counter (PTTL ${alive} ms) was evicted before it expired`).toBe(true);
    await newHolderAfterLoss(servers.evictServer, key, fences);
  });
});

describe('fences right after one grant of a block', () => {
  // The documented window (src/backends/redis/protocol/lua/lib/fences.lua): a block leads the
  // server clock by at most its own size, so only a loss and a new grant within (block size) / 4 µs
  // of the grant can give the new holder a fence below the old block's end — never below a fence
  // the old grant's first holder got.
  it('a grant just after a FLUSHALL is above the fence handed out just before it; and above the whole block once the clock has passed it', async () => {
    const redis = client(servers.lockServer);
    const store = new RedisLockStore(redis);
    opened.push(() => store.close());
    // The scripts are known to the server, so the three commands below run back to back.
    await store.tryAcquire('warm-up', 'w', 1000);
    await store.release('warm-up', 'w');
    const key = 'block:flushall';
    const block = BIG_COHORT.maxPasses + 1;
    const [a, , b] = await Promise.all([store.tryAcquire(key, 'A', 30_000, block), redis.flushall(), store.tryAcquire(key, 'B', 30_000, 1)]);
    expect(a.acquired && b.acquired).toBe(true);
    if (!a.acquired || !b.acquired) return;
    expect(b.fence, "B's fence vs the fence A's holder got").toBeGreaterThan(a.fence);
    await store.release(key, 'B');

    // (block size) / 4 µs later — 250 µs; 2 ms here — the clock has passed A's whole block.
    const a2 = await store.tryAcquire(key, 'A2', 30_000, block);
    await new Promise((resolve) => setTimeout(resolve, 2));
    await redis.flushall();
    const b2 = await store.tryAcquire(key, 'B2', 30_000, 1);
    if (!a2.acquired || !b2.acquired) throw new Error('refused');
    const end = a2.fence + (a2.fences ?? block) - 1;
    expect(b2.fence, `B's fence vs the end of A's block (${end})`).toBeGreaterThan(end);
    await store.release(key, 'B2');
  });
});

describe('fences of a grant nobody else waits for (the common path records no counter)', () => {
  // The acquire script does not write the fence counter when it takes a free key with nothing
  // beside it: the key is held, so the next grant comes after the release (or the TTL, ≥ 1 ms, by
  // when the clock has passed any block). The release records the block when the clock has not
  // passed it yet, from what the holder says of its grant, or, when it does not say, the most a
  // grant can reserve (lua/lib/recordBlock.lua); when the holder knows the clock has passed it
  // (more time since the grant's answer than the block spans), the release reads no clock at all.
  const warm = async (store: RedisLockStore) => {
    // The scripts are known to the server afterwards, so pipelined calls run back to back.
    await store.tryAcquire('warm-up', 'w', 1000);
    await store.release('warm-up', 'w');
  };
  const newStore = () => {
    const store = new RedisLockStore(client(servers.lockServer));
    opened.push(() => store.close());
    return store;
  };
  /** The grant as its holder tells the store at the release, answered `agoMs` ago. */
  const held = (r: AcquireResult, asked: number, agoMs = 0): ReleasedGrant => {
    if (!r.acquired) throw new Error('refused');
    return { fence: r.fence, fences: r.fences ?? asked, answeredAt: performance.now() - agoMs };
  };
  const calls = async (command: string) =>
    Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await client(servers.lockServer).info('commandstats'))?.[1] ?? 0);

  it('writes only the lock key; a release after the clock passed the block reads no clock and leaves nothing', async () => {
    const admin = client(servers.lockServer);
    const store = newStore();
    await warm(store);
    const key = 'common:nothing';
    const got = await store.tryAcquire(key, 'A', 30_000, 16);
    const grant = held(got, 16);
    expect(await admin.exists(helperKey(key, 'fence')), 'a fence counter written by the grant').toBe(0);
    await sleep(2); // the clock passes A's 16 fences in 4 µs
    await admin.config('RESETSTAT');
    expect(await store.release(key, 'A', grant)).toBe(true);
    expect(await calls('time'), 'TIME run by the release').toBe(0);
    expect(await admin.keys(`*${key}*`)).toEqual([]);
  });

  it('a release right behind its grant reads the clock and records the block: the next grant starts above it', async () => {
    const admin = client(servers.lockServer);
    const store = newStore();
    await warm(store);
    const key = 'common:back-to-back';
    for (let i = 0; i < 20; i++) {
      const a = await store.tryAcquire(key, `A${i}`, 30_000, 1024);
      await admin.config('RESETSTAT');
      // (answered "1 s from now": the store says the block's end whatever pause the machine takes
      // between these lines — else a pause longer than the block's 256 µs makes it say 'passed')
      const [released, b] = await Promise.all([store.release(key, `A${i}`, held(a, 1024, -1000)), store.tryAcquire(key, `B${i}`, 30_000, 1)]);
      expect(released).toBe(true);
      expect(await calls('time'), 'TIME: the release and the next grant').toBeGreaterThanOrEqual(2);
      if (!a.acquired || !b.acquired) throw new Error('refused');
      expect(b.fence, "the next grant vs the end of A's block").toBeGreaterThan(a.fence + (a.fences ?? 1024) - 1);
      await store.release(key, `B${i}`, held(b, 1));
    }
  });

  it('the common-path fence is the server clock seed + 1 (acquire-4.lua computes the seed of lib/clock.lua inline), between TIME read before and after', async () => {
    const admin = client(servers.lockServer);
    const store = newStore();
    await warm(store);
    for (const asked of [1, 16, 1024, 5000]) {
      const key = `common:seed:${asked}`;
      const before = await seedOf(admin);
      const got = await store.tryAcquire(key, 'A', 30_000, asked);
      const after = await seedOf(admin);
      if (!got.acquired) throw new Error('refused');
      expect(got.fence).toBeGreaterThan(before);
      expect(got.fence).toBeLessThanOrEqual(after + 1);
      expect(got.fences ?? asked).toBe(Math.min(asked, 1024));
      await store.release(key, 'A');
    }
  });

  it('a release that says a last fence the clock has passed reads the clock and nothing else: no counter read or written', async () => {
    const admin = client(servers.lockServer);
    const store = newStore();
    await warm(store);
    const key = 'common:said-passed-by-the-server';
    const got = await store.tryAcquire(key, 'A', 30_000, 16);
    await sleep(2); // the clock passes A's 16 fences in 4 µs
    await admin.config('RESETSTAT');
    // (answered "1 s from now": the store sends the block's last fence, the script finds it passed)
    expect(await store.release(key, 'A', held(got, 16, -1000))).toBe(true);
    expect(await calls('time'), 'TIME run by the release').toBe(1);
    expect(await calls('get'), 'GETs: the lock key only').toBe(1);
    expect(await calls('set'), 'SETs: none').toBe(0);
    expect(await admin.keys(`*${key}*`)).toEqual([]);
  });

  it('a release that does not say what its grant reserved is taken to have reserved the most a grant can (1,024 fences)', async () => {
    const store = newStore();
    await warm(store);
    const key = 'common:unsaid';
    // Pipelined: the three scripts run back to back, well within A's block of 1,024 fences.
    const [a, released, b] = await Promise.all([store.tryAcquire(key, 'A', 30_000, 1024), store.release(key, 'A'), store.tryAcquire(key, 'B', 30_000, 4)]);
    expect(released).toBe(true);
    if (!a.acquired || !b.acquired) throw new Error('refused');
    expect(a.fences ?? 1024).toBe(1024);
    expect(b.fence, "B's fence vs the end of A's block").toBeGreaterThan(a.fence + 1023);
    await store.release(key, 'B');
  });

  it('what the release says is used: a small block said right away leaves the next grant all its fences; unsaid, it gets fewer', async () => {
    const store = newStore();
    await warm(store);
    const key = 'common:said-small';
    const a = await store.tryAcquire(key, 'A', 30_000, 1);
    const [, b] = await Promise.all([store.release(key, 'A', held(a, 1)), store.tryAcquire(key, 'B', 30_000, 1024)]);
    expect(b, "said: the counter is at most at A's one fence, behind the clock").toMatchObject({ acquired: true });
    if (b.acquired) expect(b.fences ?? 1024).toBe(1024);
    // Unsaid: the release records clock + 1,024, so a grant right behind it (within 256 µs on the
    // server: tried a few times, as a loaded machine may pause Redis between the two) gets fewer.
    let holder = 'B';
    let previous = b;
    const counts: number[] = [];
    for (let i = 0; i < 5 && !counts.some((n) => n < 1024); i++) {
      const [, c] = await Promise.all([store.release(key, holder), store.tryAcquire(key, `C${i}`, 30_000, 1024)]);
      if (!c.acquired || !previous.acquired) throw new Error('refused');
      expect(c.fence, "C's fence vs the end of the released block").toBeGreaterThan(previous.fence + (previous.fences ?? 1024) - 1);
      counts.push(c.fences ?? 1024);
      holder = `C${i}`;
      previous = c;
    }
    expect(Math.min(...counts), 'unsaid: the counter is 1,024 ahead of the clock').toBeLessThan(1024);
    await store.release(key, holder);
  });

  it('a release that hands the key to a waiter in line gives it fences above the released block, said or not', async () => {
    const store = newStore();
    await warm(store);
    const key = 'common:handoff';
    for (const say of [true, false]) {
      const a = await store.tryAcquire(key, 'A', 30_000, 1024);
      const [queued, handed] = await Promise.all([
        store.tryAcquireInLine(key, 'W', 30_000, 4, 'keep'),
        store.release(key, 'A', say ? held(a, 1024) : undefined),
      ]);
      expect(queued).toMatchObject({ queued: true });
      expect(handed).toBe(true);
      const w = await store.tryAcquireInLine(key, 'W', 30_000, 4, 'keep');
      if (!a.acquired || !w.acquired) throw new Error('W was not handed the key');
      expect(w.fence, `the waiter's fence vs the end of A's block (${say ? 'said' : 'unsaid'})`).toBeGreaterThan(a.fence + (a.fences ?? 1024) - 1);
      await store.release(key, 'W');
      await sleep(2);
    }
  });

  it('a grant never reserves more than 1,024 fences, whatever it asks for', async () => {
    const store = newStore();
    const key = 'common:cap';
    const a = await store.tryAcquire(key, 'A', 30_000, 100_000);
    expect(a).toMatchObject({ acquired: true, fences: 1024 });
    await store.release(key, 'A', held(a, 100_000));
  });

  it('the engine tells the store its grant as answered, with the fences its holders got, and a grant sent beside its release lands above them', async () => {
    const store = newStore();
    await warm(store);
    const recording = new RecordingStore(store);
    const locker = createLocker({ store: recording, keyPrefix: '', cohort: BIG_COHORT });
    opened.push(() => locker.close());
    const key = 'common:engine';
    for (let i = 0; i < 100; i++) {
      // Others of this process wait at times (i % 3 === 0), so some grants reserve a big block.
      const extra = i % 3 === 0 ? [firstValueFrom(locker.acquire(key, { ttl: 5000 })).then((l) => l.release())] : [];
      const lease = await firstValueFrom(locker.acquire(key, { ttl: 5000 }));
      await Promise.all(extra);
      const asked = recording.calls.filter((c) => c.op === 'tryAcquire').at(-1)!;
      const grant = recording.calls.filter((c) => c.op === 'tryAcquire' && c.result?.acquired).at(-1)!;
      if (!grant.result?.acquired) throw new Error('unreachable');
      const reservedEnd = grant.result.fence + (grant.result.fences ?? asked.fences!) - 1;
      // the last fence this turn gave out: this lease's (the extra holder, if any, came first)
      const end = lease.fence;
      expect(end).toBeLessThanOrEqual(reservedEnd);
      // The holder releases, and another store's grant is sent at once.
      const [, b] = await Promise.all([lease.release(), store.tryAcquire(key, `B${i}`, 5000, 1)]);
      const release = recording.calls.filter((c) => c.op === 'release').at(-1)!;
      expect(release.grant, 'what the engine told the store at the release').toMatchObject({ fence: grant.result.fence, fences: end - grant.result.fence + 1 });
      expect(release.grant!.answeredAt, 'answered after the call was sent').toBeGreaterThanOrEqual(grant.at);
      if (b.acquired) {
        expect(b.fence, `grant ${i} of another store vs the end of the locker's block`).toBeGreaterThan(end);
        await store.release(key, `B${i}`, held(b, 1));
      }
    }
  });
});
