/**
 * The event-pipeline example, end to end: fills a Redis Stream with balance updates, starts
 * consumer processes in one consumer group, SIGKILLs one of them while it has messages pending,
 * lets the others claim those (XAUTOCLAIM) and finish, stops them, and checks that every account's
 * balance is exactly the sum of its updates and every message was applied exactly once.
 * Used by `main.ts` (run it by hand) and by the test suite.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { CONSUMER_ENV, keys, type ConsumerMessage, type ConsumerSettings, type ParentMessage } from './protocol.js';

const CONSUMER_PATH = fileURLToPath(new URL('./consumer.ts', import.meta.url));

export interface PipelineOptions {
  readonly host: string;
  readonly port: number;
  /** Consumer processes (at least 2: one is killed). @default 3 */
  readonly consumers?: number;
  /** Messages in the stream. @default 300 */
  readonly messages?: number;
  /** Accounts the messages update. @default 5 */
  readonly accounts?: number;
  /** The first consumer is killed once it has applied this many messages. @default 30 */
  readonly killAfterApplied?: number;
  /** Longest run before giving up, in ms. @default 25000 */
  readonly timeoutMs?: number;
  /** Time between reading a balance and writing it back, in ms. @default 2 */
  readonly workMs?: number;
  /** Locks in each process's memory instead of Redis (no exclusion across processes: lost updates). @default false */
  readonly inMemoryLocks?: boolean;
}

export interface PipelineReport {
  /** Balance of each account from the updates in the stream. */
  readonly expected: Record<string, number>;
  /** Balance of each account in Redis at the end. */
  readonly balances: Record<string, number>;
  readonly messages: number;
  /** Entries in the applied log, and distinct ids among them. */
  readonly applied: number;
  readonly distinctApplied: number;
  /** Messages pending on the killed consumer when it died. */
  readonly pendingOnKilled: number;
  /** Messages the survivors took over with XAUTOCLAIM. */
  readonly claimed: number;
  /** Redelivered messages found already applied (acknowledged only). */
  readonly duplicates: number;
  /** Exit codes of the consumers that were stopped (0 each: they closed their clients and exited). */
  readonly exitCodes: Array<number | null>;
  /** Messages whose processing failed and were retried. */
  readonly failures: number;
}

interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly messages: ConsumerMessage[];
  readonly exited: Promise<number | null>;
  applied: number;
}

/** Runs the example against the Redis server at host:port (its keys: `events`, `balance:*`, `applied:*`). */
export async function runEventPipeline(options: PipelineOptions): Promise<PipelineReport> {
  const { host, port, consumers = 3, messages = 300, accounts = 5, killAfterApplied = 30, timeoutMs = 25_000, workMs = 2, inMemoryLocks = false } = options;
  const deadline = Date.now() + timeoutMs;
  const stream = 'events';
  const group = 'balances';
  const admin = new Redis({ host, port });
  admin.on('error', () => undefined);
  const children: Child[] = [];
  try {
    await admin.del(stream, keys.log);
    await admin.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    const expected: Record<string, number> = {};
    const batch = admin.pipeline();
    for (let i = 0; i < messages; i++) {
      const account = `a${i % accounts}`;
      const amount = ((i * 37) % 101) - 40; // deterministic, both signs
      expected[account] = (expected[account] ?? 0) + amount;
      batch.xadd(stream, '*', 'account', account, 'amount', String(amount));
    }
    await batch.exec();

    for (let n = 0; n < consumers; n++)
      children.push(start({ host, port, stream, group, consumer: `consumer-${n}`, claimIdleMs: 1_000, concurrency: 4, workMs, inMemoryLocks }));
    await Promise.all(children.map((child) => until(() => child.messages.some((m) => m.type === 'ready'), deadline, `${child.name} ready`)));
    // All read from now on: on a loaded machine, the first one up would otherwise take the whole
    // stream before the one to be killed has applied any.
    for (const child of children) child.process.send({ type: 'start' } satisfies ParentMessage);

    // Kill the first consumer mid-run, with messages read and not yet acknowledged.
    const victim = children[0]!;
    await until(() => victim.applied >= killAfterApplied, deadline, `${victim.name} applying ${killAfterApplied} messages`);
    victim.process.kill('SIGKILL');
    await victim.exited;
    const pending = (await admin.xpending(stream, group, '-', '+', 1000, victim.name)) as unknown[];

    // Each message is logged when first applied and acknowledged after: the log holds every one
    // (more than once if two consumers applied it) and nothing is pending once all are done.
    await untilAsync(
      async () => (await admin.llen(keys.log)) >= messages && Number(((await admin.xpending(stream, group)) as [number])[0]) === 0,
      deadline,
      'every message applied and acknowledged',
    );

    const survivors = children.slice(1);
    for (const child of survivors) child.process.send({ type: 'stop' } satisfies ParentMessage);
    const exitCodes = await Promise.all(survivors.map((child) => within(child.exited, Math.max(1, deadline - Date.now()), `${child.name} to exit`)));

    const log = await admin.lrange(keys.log, 0, -1);
    const balances: Record<string, number> = {};
    for (const account of Object.keys(expected)) balances[account] = Number((await admin.get(keys.balance(account))) ?? '0');
    const all = children.flatMap((child) => child.messages);
    return {
      expected,
      balances,
      messages,
      applied: log.length,
      distinctApplied: new Set(log).size,
      pendingOnKilled: pending.length,
      claimed: all.reduce((sum, m) => sum + (m.type === 'claimed' ? m.count : 0), 0),
      duplicates: all.filter((m) => m.type === 'duplicate').length,
      failures: all.filter((m) => m.type === 'failed').length,
      exitCodes,
    };
  } finally {
    for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    await admin.quit().catch(() => admin.disconnect());
  }
}

function start(settings: ConsumerSettings): Child {
  const process = fork(CONSUMER_PATH, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...globalThis.process.env, [CONSUMER_ENV]: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => process.once('exit', (code) => resolve(code)));
  const child: Child = { name: settings.consumer, process, messages: [], exited, applied: 0 };
  process.on('message', (message: ConsumerMessage) => {
    child.messages.push(message);
    if (message.type === 'applied') child.applied++;
  });
  return child;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(done: () => boolean, deadline: number, what: string): Promise<void> {
  await untilAsync(async () => done(), deadline, what);
}

async function untilAsync(done: () => Promise<boolean>, deadline: number, what: string): Promise<void> {
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`event pipeline: no ${what} in time`);
    await sleep(20);
  }
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`event pipeline: no ${what} within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
