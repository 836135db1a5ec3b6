/**
 * Cancel / release / renewal races on a real Redis, in a child process (test/fixtures/leaseWorker.ts,
 * role `racer`): thousands of leases with TTLs of 20–60 ms (some 300–1500 ms) renewed every few
 * milliseconds, on hot keys shared by two lockers, cancelled, completed, released and extended at
 * random moments. The child checks each invariant as it happens (see the fixture): no renewal,
 * loss or extend call for a store lock once its release was sent, each one given back exactly
 * once and each holder's release reported once, and (white-box, since the engine's state checks
 * hide it from every outside view) no lease clock entry left for a store lock that ended. This
 * file checks what only an outsider can see:
 *
 * - after the races, the server runs no lock command (`INFO commandstats`: the scripts and what
 *   they call) for an idle window of many renewal intervals: no renewal is still running while
 *   nothing is held;
 * - no lock key and no waiters' line is left (fence counters aside);
 * - once its clients have quit, nothing keeps the child alive (`getActiveResourcesInfo()` is empty
 *   but for the IPC channel, though its lease clock is still armed for the renewal of a 30 s lease
 *   it gave back), and it exits by itself, with code 0, soon after reporting, without
 *   process.exit.
 *
 * A second run freezes Redis (SIGSTOP) in the middle of the races: held leases are lost with
 * 'store-unreachable', and the same invariants hold.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RacerReport, RacerSettings, WorkerMessage } from '../fixtures/leaseWorker.js';
import { RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect, EmbeddedRedis } from '../support/redis.js';

const worker = fileURLToPath(new URL('../fixtures/leaseWorker.ts', import.meta.url));
/** The idle window: many times the longest renewal interval the races use (50 ms). */
const IDLE_MS = 400;
/** How long the child may take to exit once it has reported. */
const EXIT_WITHIN_MS = 5_000;

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Commands that neither take, keep nor give back a lock: connection upkeep, and the wake-up
 * channels (a store's subscriber drops a channel a while after its last waiter left).
 */
const NOT_LOCK_WORK = new Set([
  'info',
  'ping',
  'client',
  'hello',
  'select',
  'quit',
  'command',
  'subscribe',
  'unsubscribe',
  'psubscribe',
  'punsubscribe',
  'ssubscribe',
  'sunsubscribe',
]);

/** Calls per command on the server, from `INFO commandstats`: the lock scripts and what they run. */
async function commandCalls(): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const match of (await observer.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!NOT_LOCK_WORK.has(match[1]!)) calls[match[1]!] = Number(match[2]);
  }
  return calls;
}

/** Keys left on the server other than fence counters (which never expire by design). */
async function keysLeft(): Promise<string[]> {
  return (await observer.keys('*')).filter((key) => !key.startsWith(`${RESERVED_PREFIX}fence:`));
}

/** The commands whose call counts differ between two snapshots, with the difference. */
function callsBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const diff: Record<string, number> = {};
  for (const [command, n] of Object.entries(after)) if (n !== (before[command] ?? 0)) diff[command] = n - (before[command] ?? 0);
  return diff;
}

/** Messages from a child, in order, taken one type at a time; an exit before the message fails. */
function messagesOf(child: ChildProcess) {
  const queue: WorkerMessage[] = [];
  let waiting: { type: WorkerMessage['type']; resolve: (m: WorkerMessage) => void; reject: (e: Error) => void } | undefined;
  child.on('message', (message) => {
    queue.push(message as WorkerMessage);
    deliver();
  });
  child.on('exit', (code, signal) => waiting?.reject(new Error(`worker exited (code ${code}, signal ${signal}) while the test waited for '${waiting.type}'`)));
  function deliver(): void {
    if (waiting === undefined) return;
    const index = queue.findIndex((m) => m.type === waiting!.type);
    if (index < 0) return;
    const [message] = queue.splice(index, 1);
    const { resolve } = waiting;
    waiting = undefined;
    resolve(message!);
  }
  return <T extends WorkerMessage['type']>(type: T): Promise<Extract<WorkerMessage, { type: T }>> =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`worker already exited while the test waited for '${type}'`));
      waiting = { type, resolve: resolve as (m: WorkerMessage) => void, reject };
      deliver();
    });
}

/** `promise`, or an error after `ms` (so that a stuck child fails the test, and is killed, in time). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timeout = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timeout));
}

/** Resolves with how the child exited, or kills it after `ms` and resolves with 'still running'. */
function exitOf(child: ChildProcess, ms: number): Promise<{ code: number | null; signal: string | null } | 'still running'> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => {
    const timeout = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('still running');
    }, ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timeout);
      resolve({ code, signal });
    });
  });
}

interface RaceResult {
  report: RacerReport;
  /** Commands the server ran during the idle window. */
  idleCalls: Record<string, number>;
  exit: Awaited<ReturnType<typeof exitOf>>;
  exitMs: number;
}

/** Runs one racer child to its end. */
async function race(settings: Omit<RacerSettings, 'role' | 'port' | 'seed'>): Promise<RaceResult> {
  const seed = Number(process.env.LEASE_RACES_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const child = fork(worker, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, LEASE_WORKER: JSON.stringify({ ...settings, role: 'racer', port: server.port, seed } satisfies RacerSettings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = exitOf(child, 50_000);
  try {
    const message = messagesOf(child);
    await within(message('ready'), 15_000, "'ready' from the racer");
    child.send('go');
    await within(message('idle'), 30_000, "'idle' from the racer (the races did not end)");
    const before = await commandCalls();
    await sleep(IDLE_MS);
    const idleCalls = callsBetween(before, await commandCalls());
    child.send('finish');
    const report = (await within(message('report'), 5_000, 'report from the racer')) as RacerReport;
    const reportedAt = performance.now();
    const exit = await Promise.race([exited, exitOf(child, EXIT_WITHIN_MS)]);
    return { report, idleCalls, exit, exitMs: performance.now() - reportedAt };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (settings.pause !== undefined) server.resume(); // never leave the server frozen
  }
}

/** The invariants every run must keep, with the seed in the message to replay a failure. */
function expectClean({ report, idleCalls, exit, exitMs }: RaceResult): void {
  if (process.env.LEASE_RACES_VERBOSE) console.log(JSON.stringify({ ...report, idleCalls, exit, exitMs }, null, 1));
  const seed = `(seed ${report.seed}: LEASE_RACES_SEED=${report.seed} replays the choices)`;
  expect(report.unhandled, `unhandled rejections / uncaught exceptions ${seed}`).toEqual([]);
  expect(report.violations, `invariants broken ${report.violationCount} times ${seed}`).toEqual([]);
  expect(report.idleActivity, `events or store calls while nothing was held ${seed}`).toEqual([]);
  expect(idleCalls, `commands the server ran in the ${IDLE_MS} ms idle window ${seed}`).toEqual({});
  expect(report.callsInFlight, `store calls still in flight after the races ${seed}`).toBe(0);
  expect(report.locksLeft, `lock keys left after the races ${seed}`).toBe(0);
  expect(report.linesLeft, `waiters' line keys left after the races ${seed}`).toBe(0);
  expect(report.activeResources, `handles or ref'd timers left after the clients quit ${seed}`).toEqual([]);
  expect(exit, `the child exits by itself, with code 0, within ${EXIT_WITHIN_MS} ms of reporting ${seed}`).toEqual({ code: 0, signal: null });
  expect(exitMs).toBeLessThan(EXIT_WITHIN_MS);
}

describe('cancel / release / renewal races (random timings, many iterations)', () => {
  it('2,000 leases: no renewal outlives its lease, no unhandled rejection, no timer left behind', async () => {
    // A long commandTimeout: a call's time limit that kept the process alive would show.
    const result = await race({ iterations: 2_000, concurrency: 32, keys: 16, commandTimeout: 20_000, waitTimeout: 3_000, quietTimeoutMs: 3_000 });
    expectClean(result);
    const { counts } = result.report;
    // The races happened: renewals during holds (one per lease on average, at least), leases given
    // up at every stage, and the tight interleavings.
    expect(counts.holds).toBeGreaterThan(800);
    expect(counts.renewed).toBeGreaterThan(500);
    expect(counts['stream unsubscribed']).toBeGreaterThan(200);
    expect(counts['stream completed']).toBeGreaterThan(100);
    expect(counts['abandoned-released']).toBeGreaterThan(0);
    expect(counts['cancelled while a renewal was in flight']).toBeGreaterThan(20);
    expect(counts['release sent while an extend was in flight']).toBeGreaterThan(20);
    expect(counts['manual holds']).toBeGreaterThan(100);
    // ... and through both kinds of hand-off: between local holders, and by the store's line.
    expect(counts['released: passed to the next local holder']).toBeGreaterThan(0);
    expect(counts['wake-up signals']).toBeGreaterThan(0);
    expect(await keysLeft()).toEqual([]);
  }, 60_000);

  it('with Redis frozen (SIGSTOP) mid-race: leases are lost as store-unreachable, and nothing else changes', async () => {
    const SENTINELS = 8;
    const result = await race({
      iterations: 1_200,
      concurrency: 32,
      keys: 16,
      // Short enough that a renewal fails well before its lease's deadline.
      commandTimeout: 25,
      waitTimeout: 3_000,
      pause: { pid: server.pid, atMs: 500, forMs: 600 },
      // Races go on for a while after Redis is back.
      minRunMs: 1_600,
      sentinels: SENTINELS,
      quietTimeoutMs: 5_000,
    });
    expectClean(result);
    const { counts } = result.report;
    expect(counts['store paused']).toBe(1);
    // Every sentinel that got its lease before the freeze lost it for want of the store.
    const sentinelsHeld = SENTINELS - (counts['sentinel: store error'] ?? 0);
    expect(sentinelsHeld).toBeGreaterThan(0);
    expect(counts['sentinel lost: store-unreachable']).toBe(sentinelsHeld);
    expect(counts['lost: store-unreachable']).toBeGreaterThanOrEqual(sentinelsHeld);
    expect(counts['renew-failed']).toBeGreaterThan(0);
    expect(counts['acquire-failed']).toBeGreaterThan(0);
    expect(counts.renewed).toBeGreaterThan(100);
    expect(await keysLeft()).toEqual([]);
  }, 60_000);
});
