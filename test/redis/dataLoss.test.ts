/**
 * Issue #10, fences when Redis loses data: a fence must strictly increase per key across whatever a
 * production Redis does — a restart without persistence, FLUSHALL / FLUSHDB, eviction under
 * allkeys-lru, a failover to a replica that missed the last writes — so that when an old holder
 * and a new one overlap, a FencedResource keeps the new holder's writes and refuses the old one's.
 *
 * Each scenario, on real servers started here (no persistence): two lockers with big cohorts
 * (`maxPasses: 1000`) share a hot key for a while (store grants going back and forth through the
 * Redis line, and local hand-offs between several concurrent holders of each locker); then locker
 * A is handed the key by the Redis line while three more of its acquisitions wait locally, so the
 * grant reserves a block of 1,001 fences; A writes to a FencedResource on another server. Then the
 * data is lost, and a new locker B takes the key (A's key is gone). B's fence must be above every
 * fence issued or reserved before (A's whole block included); B's write is accepted at once; A's
 * local successors, which still think they hold the lock and get the next fences of A's block,
 * have every write refused; B's later writes are still accepted.
 *
 * And a FencedResource cannot be jammed by a stale write that ioredis sends late: one held in the
 * offline queue while the connection was down, and one re-sent after a reconnect
 * (autoResendUnfulfilledCommands).
 */
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Lease, LockEvent, Locker } from '../../src/index.js';
import { FencedResource } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { fencesToReserve } from '../../src/engine/fencing/FenceBlock.js';
import { BIG_COHORT, dataLossServers, type Process } from '../support/dataLossServers.js';
import { connect, type EmbeddedRedis } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';

/** Local waiters queued behind the holder A when the Redis line hands it the key. */
const LOCAL_WAITERS = 3;
const BLOCK = fencesToReserve(LOCAL_WAITERS, BIG_COHORT.maxPasses);

const servers = dataLossServers();
const { client, opened } = servers;
let resourceAdmin: Redis;
beforeAll(() => {
  resourceAdmin = client(servers.resourceServer);
});

/** One "process" on `server`, with big cohorts unless given another `cohort` (an `undefined` argument still means big cohorts). */
const newProcess = (server: EmbeddedRedis, cohort: typeof BIG_COHORT | undefined = BIG_COHORT, log?: LockEvent[]): Process =>
  servers.newProcess(server, { cohort, log });

const _fencesOf = (events: LockEvent[]) => events.flatMap((e) => (e.type === 'acquired' ? [e.fence] : []));

/** Where a scenario runs, and what loses the data. */
interface Scenario {
  readonly name: string;
  /** The server A's lockers use. */
  readonly aServer: () => EmbeddedRedis;
  /** The server B uses after the event (the promoted replica, in a failover). */
  readonly bServer: () => EmbeddedRedis;
  /** Runs after the build-up, before A's grant (a replica stops replicating here). */
  readonly beforeLastWrites?: (admin: Redis) => Promise<void>;
  /** Loses the data; `key` is the lock key as stored. */
  readonly event: (admin: Redis, key: string) => Promise<void>;
}

/**
 * The hot phase: `a1` with 6 concurrent holders, `a2` with 3, on `key` for at least `ms` and until
 * each locker was granted it by the store 3 times and holders passed it on locally 100 times (a
 * turn lasts until its block of 1,001 fences is used up); each hold ends a microtask after it
 * began. Returns every fence handed out, in the order the holds began.
 */
async function buildUp(a1: Process, a2: Process, key: string, log: LockEvent[], ms: number): Promise<number[]> {
  let stop = false;
  const loop = async (locker: Locker) => {
    while (!stop) {
      await lastValueFrom(locker.using(key, () => Promise.resolve(0), { waitTimeout: 20_000 }));
    }
  };
  const loops = [...Array.from({ length: 6 }, () => loop(a1.locker)), ...Array.from({ length: 3 }, () => loop(a2.locker))];
  const storeGrants = (events: LockEvent[]) => events.filter((e) => e.type === 'acquired' && !e.passed).length;
  const passes = () => log.filter((e) => e.type === 'acquired' && e.passed).length;
  await sleep(ms);
  await eventually(() => storeGrants(a1.events) >= 3 && storeGrants(a2.events) >= 3 && passes() >= 100, 10_000, 20);
  stop = true;
  await Promise.all(loops);
  const acquired = log.filter((e): e is Extract<LockEvent, { type: 'acquired' }> => e.type === 'acquired');
  // Holds never overlap, so the order in which they began is the order of their grants.
  const fences = acquired.map((e) => e.fence);
  const backwards = fences.flatMap((fence, i) => (i > 0 && fence <= fences[i - 1]! ? [`#${i}: ${fence} after ${fences[i - 1]}`] : []));
  expect(backwards).toEqual([]);
  return fences;
}

async function runScenario(scenario: Scenario, key: string): Promise<void> {
  const aServer = scenario.aServer();
  const admin = client(aServer);
  const storedKey = `lock:${key}`;
  const log: LockEvent[] = [];
  const a1 = newProcess(aServer, BIG_COHORT, log);
  const a2 = newProcess(aServer, BIG_COHORT, log);

  const issued = await buildUp(a1, a2, key, log, 400);
  await scenario.beforeLastWrites?.(admin);

  // The Redis line hands the key to a1 while 1 + 3 of its acquisitions wait: a block of 1,001.
  const previous = await firstValueFrom(a2.locker.acquire(key));
  const pending = Array.from({ length: 1 + LOCAL_WAITERS }, () => firstValueFrom(a1.locker.acquire(key, { waitTimeout: 20_000 })));
  const places = helperKey(storedKey, 'places');
  await eventually(
    async () => Object.entries(await admin.hgetall(places)).some(([field, place]) => field.startsWith('w:') && place.split(' ')[2] === String(BLOCK)),
    5000,
  );
  expect(await previous.release()).toBe(true);
  const a: Lease = await pending[0]!;
  issued.push(previous.fence, a.fence);
  expect(a.fence).toBeGreaterThan(Math.max(...issued.slice(0, -1)));

  const resource = new FencedResource(client(servers.resourceServer), `resource:${scenario.name}`);
  expect(await resource.write(a.fence, 'A')).toEqual({ accepted: true, fence: a.fence });

  await scenario.event(admin, storedKey);

  // B, a new process on the server as it is now: A's key is gone, so B gets the lock at once.
  const b = newProcess(scenario.bServer(), undefined);
  const started = performance.now();
  const lease = await firstValueFrom(b.locker.acquire(key, { waitTimeout: 10_000 }));
  expect(performance.now() - started).toBeLessThan(5_000);
  const highestBefore = Math.max(...issued);
  expect(lease.fence, `B's fence vs the highest fence issued before (${highestBefore})`).toBeGreaterThan(highestBefore);
  expect(lease.fence, `B's fence vs the end of A's reserved block (${a.fence + BLOCK - 1})`).toBeGreaterThan(a.fence + BLOCK - 1);
  // The new holder's write is accepted at once.
  expect(await resource.write(lease.fence, 'B')).toEqual({ accepted: true, fence: lease.fence });

  // A's local successors still think they hold the lock (A's lease is valid for its TTL): they get
  // the next fences of A's block, and every write of theirs is refused.
  let holder = a;
  for (let i = 1; i <= LOCAL_WAITERS; i++) {
    expect(await holder.release()).toBe(true);
    const next = await pending[i]!;
    expect(next.fence).toBe(a.fence + i);
    expect(await resource.write(next.fence, `A's successor ${i}`)).toEqual({ accepted: false, highestFence: lease.fence });
    holder = next;
  }
  await holder.release();

  expect(await resource.write(lease.fence, 'B again')).toEqual({ accepted: true, fence: lease.fence });
  expect(await resource.read()).toEqual({ fence: lease.fence, value: 'B again' });
  expect(await lease.release()).toBe(true);
}

/** Junk values written to fill a server with maxmemory. */
const JUNK = 'x'.repeat(4096);

const SCENARIOS: Scenario[] = [
  {
    name: 'restart',
    aServer: () => servers.lockServer,
    bServer: () => servers.lockServer,
    event: async () => {
      await servers.lockServer.kill();
      await servers.lockServer.restart();
    },
  },
  {
    name: 'flushall',
    aServer: () => servers.lockServer,
    bServer: () => servers.lockServer,
    event: async (admin) => {
      await admin.flushall();
    },
  },
  {
    name: 'flushdb',
    aServer: () => servers.lockServer,
    bServer: () => servers.lockServer,
    event: async (admin) => {
      await admin.flushdb();
    },
  },
  {
    name: 'eviction',
    aServer: () => servers.evictServer,
    bServer: () => servers.evictServer,
    event: async (admin, key) => {
      // Everything of the lock goes: its key, its fence counter, its line and places.
      const lockKeys = [key, helperKey(key, 'fence'), helperKey(key, 'line'), helperKey(key, 'places')];
      let written = 0;
      for (let batch = 0; (await admin.exists(...lockKeys)) > 0; batch++) {
        expect(batch, 'the lock key was never evicted').toBeLessThan(400);
        const pipeline = admin.pipeline();
        for (let i = 0; i < 100; i++) pipeline.set(`junk:${written++}`, JUNK);
        await pipeline.exec();
      }
      expect(Number(/evicted_keys:(\d+)/.exec(await admin.info('stats'))?.[1])).toBeGreaterThan(0);
    },
  },
  {
    name: 'failover',
    aServer: () => servers.primary,
    bServer: () => servers.replica,
    beforeLastWrites: async (admin) => {
      // The replica has everything so far, then stops replicating: it misses A's grant and write.
      const link = connect(servers.replica);
      try {
        await eventually(async () => /master_link_status:up/.test(await link.info('replication')), 10_000, 50);
        expect(await admin.call('WAIT', '1', '5000')).toBe(1);
        await link.call('REPLICAOF', 'NO', 'ONE');
      } finally {
        link.disconnect();
      }
    },
    event: async () => {
      // The replica is promoted: B's clients connect to it (see bServer).
    },
  },
];

describe('fences after Redis loses the lock data', () => {
  it.each(SCENARIOS)("$name: the new holder's fence is above every fence issued or reserved before, and only its writes are accepted", async (scenario) => {
    await runScenario(scenario, `ledger:${scenario.name}`);
  });
});

describe('a FencedResource and stale writes that ioredis sends late', () => {
  /** A holder A before a restart of the lock server, and B after it, on one key. */
  async function holdersAcrossRestart(key: string): Promise<{ a: Lease; b: Lease }> {
    const a1 = newProcess(servers.lockServer);
    const a = await firstValueFrom(a1.locker.acquire(key));
    await servers.lockServer.kill();
    await servers.lockServer.restart();
    const b = await firstValueFrom(newProcess(servers.lockServer, undefined).locker.acquire(key, { waitTimeout: 10_000 }));
    expect(b.fence).toBeGreaterThan(a.fence);
    return { a, b };
  }

  it('a write held in the offline queue while the connection was down is refused when it finally runs', async () => {
    const key = 'resource:offline-queue';
    // A's connection to the resource reconnects only after 2 s (time enough for the lock server's
    // restart and B's acquisition and write, even on a loaded machine: with 300 ms a CI run saw
    // A's late write land first); meanwhile ioredis queues commands.
    const aClient = connect(servers.resourceServer, { retryStrategy: () => 2000, maxRetriesPerRequest: null });
    opened.push(() => aClient.disconnect());
    const resourceA = new FencedResource(aClient, key);
    const resourceB = new FencedResource(client(servers.resourceServer), key);

    const a1 = newProcess(servers.lockServer);
    const a = await firstValueFrom(a1.locker.acquire(key));
    expect(await resourceA.write(a.fence, 'A')).toMatchObject({ accepted: true });

    // A's connection drops; A writes again (queued offline), then the lock server loses A's lock.
    const id = await aClient.client('ID');
    await resourceAdmin.client('KILL', 'ID', String(id));
    await eventually(() => aClient.status !== 'ready', 2000);
    const late = resourceA.write(a.fence, 'A, late');
    await servers.lockServer.kill();
    await servers.lockServer.restart();

    const b = await firstValueFrom(newProcess(servers.lockServer, undefined).locker.acquire(key, { waitTimeout: 10_000 }));
    expect(b.fence).toBeGreaterThan(a.fence);
    expect(await resourceB.write(b.fence, 'B')).toEqual({ accepted: true, fence: b.fence });

    // A's queued write goes out once its connection is back: refused.
    expect(await late).toEqual({ accepted: false, highestFence: b.fence });
    expect(await resourceB.write(b.fence, 'B again')).toEqual({ accepted: true, fence: b.fence });
    expect(await resourceB.read()).toEqual({ fence: b.fence, value: 'B again' });
    await a.release();
    expect(await b.release()).toBe(true);
  });

  it('a write re-sent after a reconnect (it had run already) is refused the second time, after the new holder wrote', async () => {
    const key = 'resource:resent';
    const aClient = connect(servers.resourceServer, { retryStrategy: () => 300, maxRetriesPerRequest: null });
    opened.push(() => aClient.disconnect());
    const resourceA = new FencedResource(aClient, key);
    const resourceB = new FencedResource(client(servers.resourceServer), key);
    await resourceA.read(); // scripts known to the server: the write below goes by SHA

    const { a, b } = await holdersAcrossRestart(key);

    // A's write reaches a frozen resource server; A's connection breaks before the answer.
    servers.resourceServer.pause();
    const late = resourceA.write(a.fence, 'A, in flight');
    try {
      await sleep(20); // on the wire
      aClient.stream.destroy();
    } finally {
      servers.resourceServer.resume();
    }
    // The frozen server runs what it had received (A's write, accepted: nobody newer wrote yet).
    await eventually(async () => (await resourceB.read())?.value === 'A, in flight', 2000);
    // B writes; then ioredis reconnects and sends A's unanswered write again.
    expect(await resourceB.write(b.fence, 'B')).toEqual({ accepted: true, fence: b.fence });
    expect(await late).toEqual({ accepted: false, highestFence: b.fence });
    expect(await resourceB.read()).toEqual({ fence: b.fence, value: 'B' });
    expect(await resourceB.write(b.fence, 'B again')).toEqual({ accepted: true, fence: b.fence });
    await a.release();
    expect(await b.release()).toBe(true);
  });
});
