/**
 * Fencing tokens on a real Redis. In one process: the fence reaches the work inside `using()` and
 * the `acquired` / `released` events, and the counter beside the key holds the last one issued.
 * Across processes (test/fixtures/leaseWorker.ts, role `fencer`): 4 processes of 2 loops each
 * take one key 1,000 times in all, with fences issued by Redis (the key going from process to
 * process) and passed on locally (from loop to loop, cohort hand-off); in the order the holds
 * happened (machine-wide monotonic clock) the fences strictly increase, all distinct. Then every
 * client is gone, the server forgets its scripts, and 4 new processes with new connections take
 * the key 200 more times: every new fence is above all the earlier ones.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { findOverlaps } from '../../src/testing.js';
import type { FencerReport, FencerSettings, WorkerMessage } from '../fixtures/leaseWorker.js';
import { RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { eventually as eventuallyEvery, sleep } from '../support/timing.js';

const eventually = (check: () => Promise<boolean> | boolean, ms = 5_000) => eventuallyEvery(check, ms, 20);

const worker = fileURLToPath(new URL('../fixtures/leaseWorker.ts', import.meta.url));
let server: EmbeddedRedis;
let observer: Redis;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  observer = connect(server);
});
afterAll(async () => {
  observer?.disconnect();
  await server?.stop();
});

interface Hold {
  fence: number;
  enter: bigint;
  exit: bigint;
  owner: string;
}

/**
 * Forks `processes` fencers, starts them together, collects their reports, and waits for each to
 * exit by itself (its Redis connection closed) with code 0.
 */
async function fencers(processes: number, settings: Omit<FencerSettings, 'role' | 'port'>): Promise<FencerReport[]> {
  const children = Array.from({ length: processes }, () =>
    fork(worker, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, LEASE_WORKER: JSON.stringify({ ...settings, role: 'fencer', port: server.port } satisfies FencerSettings) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  try {
    const exits = children.map((child) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))));
    const next = (type: WorkerMessage['type']) =>
      Promise.all(
        children.map(
          (child) =>
            new Promise<WorkerMessage>((resolve, reject) => {
              const onMessage = (message: WorkerMessage) => {
                if (message.type !== type) return;
                child.off('message', onMessage);
                resolve(message);
              };
              child.on('message', onMessage);
              child.once('exit', (code) => reject(new Error(`fencer exited (code ${code}) before '${type}'`)));
            }),
        ),
      );
    await within(next('ready'), 15_000, "'ready' from every fencer");
    const reports = next('report');
    children.forEach((child) => child.send('go'));
    const result = (await within(reports, 30_000, 'a report from every fencer')) as FencerReport[];
    const codes = await Promise.race([Promise.all(exits), sleep(10_000).then(() => 'fencers still running after 10 s')]);
    expect(codes).toEqual(children.map(() => 0));
    return result;
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** `promise`, or an error after `ms` (so that stuck children fail the test, and are killed, in time). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timeout = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timeout));
}

/** Every hold of every report, labelled with its process, in the order they were entered. */
function holdsOf(reports: FencerReport[], phase: string): Hold[] {
  return reports
    .flatMap((report, p) => report.holds.map(([fence, enter, exit]) => ({ fence, enter: BigInt(enter), exit: BigInt(exit), owner: `${phase}/${p}` })))
    .sort((a, b) => (a.enter < b.enter ? -1 : a.enter > b.enter ? 1 : 0));
}

/** Each place where a hold's fence is not above the fence of the hold entered just before it. */
function notIncreasing(holds: Hold[]): string[] {
  const breaks: string[] = [];
  for (let i = 1; i < holds.length; i++) {
    const [before, after] = [holds[i - 1]!, holds[i]!];
    if (after.fence <= before.fence) breaks.push(`#${i}: fence ${after.fence} (${after.owner}) entered after fence ${before.fence} (${before.owner})`);
  }
  return breaks;
}

/** How often consecutive holds belong to different processes. */
const handovers = (holds: Hold[]) => holds.filter((h, i) => i > 0 && h.owner !== holds[i - 1]!.owner).length;

/** EVAL calls the server has run (a script it did not know is sent by EVAL). */
async function evalCalls(): Promise<number> {
  return Number(/^cmdstat_eval:calls=(\d+)/m.exec(await observer.info('commandstats'))?.[1] ?? 0);
}

/** Keys left on the server other than fence counters (which expire a few ms after a grant). */
async function keysLeft(): Promise<string[]> {
  return (await observer.keys('*')).filter((key) => !key.startsWith(`${RESERVED_PREFIX}fence:`));
}

describe('fencing tokens', () => {
  it('reach the work inside using(), and the acquired and released events', async () => {
    const client = connect(server);
    const store = new RedisLockStore(client);
    try {
      const locker = createLocker({ store });
      const events: LockEvent[] = [];
      locker.events$.subscribe((e) => events.push(e));

      const seen = await lastValueFrom(locker.using('fence:visible', (lease) => of({ fence: lease.fence, token: lease.token })));
      expect(Number.isSafeInteger(seen.fence) && seen.fence > 0).toBe(true);
      expect(events.find((e) => e.type === 'acquired')).toMatchObject({ type: 'acquired', key: 'fence:visible', token: seen.token, fence: seen.fence });
      expect(events.find((e) => e.type === 'released')).toMatchObject({ type: 'released', token: seen.token, fence: seen.fence, outcome: 'released' });

      // The next holder, through acquire(), gets a greater fence, and the event says so too.
      const lease = await firstValueFrom(locker.acquire('fence:visible'));
      expect(lease.fence).toBeGreaterThan(seen.fence);
      expect(events.filter((e) => e.type === 'acquired').at(-1)).toMatchObject({ token: lease.token, fence: lease.fence });
      expect(await lease.release()).toBe(true);
    } finally {
      store.close();
      client.disconnect();
    }
  });

  it('strictly increase over 1,000 acquisitions of one key by 4 processes, and keep increasing after every client reconnects', async () => {
    const key = 'fence:hot';

    // Phase 1: 4 processes × 2 loops × 125 acquisitions.
    const first = await fencers(4, { key, loops: 2, iterations: 125 });
    expect(first.flatMap((r) => r.errors)).toEqual([]);
    expect(first.flatMap((r) => r.mismatches)).toEqual([]);
    const holds1 = holdsOf(first, 'phase 1');
    expect(holds1).toHaveLength(1_000);
    // The holds never overlapped, so their order of entry is the order the lock was granted.
    expect(findOverlaps(holds1)).toEqual([]);
    expect(notIncreasing(holds1)).toEqual([]);
    const fences1 = holds1.map((h) => h.fence);
    expect(new Set(fences1).size).toBe(1_000);
    // Every process held the key, and the key went back and forth between them (fences issued by
    // Redis), and from one loop to the other inside a process (fences passed on locally).
    if (process.env.FENCING_VERBOSE) console.log({ handovers: handovers(holds1), passes: first.map((r) => r.passes), fences: [fences1[0], fences1.at(-1)] });
    expect(new Set(holds1.map((h) => h.owner)).size).toBe(4);
    expect(handovers(holds1)).toBeGreaterThan(100);
    expect(first.reduce((n, r) => n + r.passes, 0)).toBeGreaterThan(0);
    expect(await keysLeft()).toEqual([]);

    // Every phase-1 connection is gone (only this observer is left), and the server forgets its
    // scripts, so the new clients start from nothing (NOSCRIPT, then EVAL).
    await eventually(
      async () =>
        String(await observer.client('LIST'))
          .trim()
          .split('\n').length === 1,
    );
    await observer.script('FLUSH');
    const evalsBefore = await evalCalls();

    // Phase 2: 4 new processes, new connections, 200 acquisitions.
    const second = await fencers(4, { key, loops: 1, iterations: 50 });
    expect(second.flatMap((r) => r.errors)).toEqual([]);
    expect(second.flatMap((r) => r.mismatches)).toEqual([]);
    expect(await evalCalls()).toBeGreaterThan(evalsBefore); // the scripts went to the server again
    const holds2 = holdsOf(second, 'phase 2');
    expect(holds2).toHaveLength(200);
    expect(findOverlaps(holds2)).toEqual([]);
    expect(notIncreasing(holds2)).toEqual([]);
    const fences2 = holds2.map((h) => h.fence);
    expect(new Set(fences2).size).toBe(200);
    const max1 = Math.max(...fences1);
    expect(fences2.filter((fence) => fence <= max1)).toEqual([]);
    // And across both phases, in order of entry, still strictly increasing.
    expect(notIncreasing([...holds1, ...holds2])).toEqual([]);
    expect(await keysLeft()).toEqual([]);
  }, 60_000);
});
