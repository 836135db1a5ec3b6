/**
 * `npm run demo`: several processes, each running several loops, take turns on one Redis lock as
 * fast as they can, and the demo shows that no two critical sections ever overlapped, what each
 * lock cost in Redis commands, how long waiters waited and how evenly the processes were served.
 *
 * Settings (environment): DEMO_WORKERS processes (4), DEMO_LOOPS concurrent loops per process (4),
 * DEMO_SECONDS of contention (6), DEMO_HOLD_MS of work while holding the lock (1).
 *
 * Exits 0 on a clean run; 1 if any sections overlapped, a worker died, or anything else failed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { monotonicNs } from '../src/testing.js';
import { EmbeddedRedis } from '../support/embeddedRedis.js';
import { numberFromEnv } from '../support/env.js';
import { HOT_KEY, SETUP_ENV, WAIT_TIMEOUT_MS, type ParentMessage, type WorkerMessage, type WorkerReport, type WorkerSetup } from './protocol.js';
import { formatInt, parseCommandStats, perSecond, printSummary, summarize } from './summary.js';

const WORKER_PATH = fileURLToPath(new URL('./worker.ts', import.meta.url));
const PROGRESS_EVERY_MS = 1_000;
/** Booting a worker means compiling TypeScript on the fly: generous, but a hang must not be silent. */
const STARTUP_TIMEOUT_MS = 30_000;
/** After the deadline a loop may still be waiting for the lock, for at most `waitTimeout`. */
const FINISH_GRACE_MS = WAIT_TIMEOUT_MS + 5_000;

interface DemoConfig {
  readonly workers: number;
  readonly loops: number;
  readonly seconds: number;
  readonly holdMs: number;
}

function readConfig(): DemoConfig {
  return {
    workers: Math.floor(numberFromEnv('DEMO_WORKERS', 4, 1)),
    loops: Math.floor(numberFromEnv('DEMO_LOOPS', 4, 1)),
    seconds: numberFromEnv('DEMO_SECONDS', 6, 0.1),
    holdMs: numberFromEnv('DEMO_HOLD_MS', 1, 0),
  };
}

/** A promise with its settle functions, for results that arrive through events. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: Error) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Some of these are awaited only later, or never if the run is cut short: an early failure must
  // not count as an unhandled rejection (which would kill this process before its cleanup).
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up after ${ms / 1000} s waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * One forked worker, seen from the parent. `finished` resolves only when the worker has both
 * reported and exited with code 0, so a crash at any point (even after reporting) is a failure.
 */
class WorkerProcess {
  private readonly child: ChildProcess;
  private readonly started = deferred<void>();
  private readonly done = deferred<WorkerReport>();
  private report: WorkerReport | undefined;
  /** Latest count the worker reported. */
  acquisitions = 0;

  constructor(
    readonly number: number,
    setup: WorkerSetup,
  ) {
    this.child = fork(WORKER_PATH, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, [SETUP_ENV]: JSON.stringify(setup) } });
    this.child.on('message', (message: WorkerMessage) => this.onMessage(message));
    this.child.once('exit', (code, signal) => this.onExit(code, signal));
    this.child.once('error', (error) => this.fail(error));
  }

  get ready(): Promise<void> {
    return this.started.promise;
  }

  get finished(): Promise<WorkerReport> {
    return this.done.promise;
  }

  go(stopAtNs: bigint): void {
    const message: ParentMessage = { type: 'go', stopAtNs: String(stopAtNs) };
    this.child.send(message);
  }

  /** Ends the worker if it is still running (after a failure elsewhere). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill();
  }

  private onMessage(message: WorkerMessage): void {
    switch (message.type) {
      case 'ready':
        this.started.resolve();
        break;
      case 'progress':
        this.acquisitions = message.acquisitions;
        break;
      case 'done':
        this.report = message;
        this.acquisitions = message.sections.length;
        break;
    }
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (code === 0 && this.report) {
      this.done.resolve(this.report);
      return;
    }
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    this.fail(new Error(`worker ${this.number} (pid ${this.child.pid}) ${how}${this.report ? '' : ' before reporting'}`));
  }

  private fail(error: Error): void {
    this.started.reject(error);
    this.done.reject(error);
  }
}

/** Prints a line per second: time since `go`, acquisitions so far, and the rate over that second. */
function showProgress(workers: readonly WorkerProcess[], startNs: bigint): () => void {
  const secondsSinceStart = () => Number(monotonicNs() - startNs) / 1e9;
  let previous = { seconds: 0, total: 0 };
  const timer = setInterval(() => {
    const now = { seconds: secondsSinceStart(), total: workers.reduce((sum, w) => sum + w.acquisitions, 0) };
    const rate = perSecond(now.total - previous.total, now.seconds - previous.seconds);
    console.log(`${now.seconds.toFixed(1).padStart(5)} s  ${formatInt(now.total).padStart(7)} acquisitions  (${rate}/s)`);
    previous = now;
  }, PROGRESS_EVERY_MS);
  return () => clearInterval(timer);
}

function printHeader(config: DemoConfig, server: EmbeddedRedis): void {
  console.log(
    [
      `rxjs-lock demo: ${config.workers} processes × ${config.loops} loops take turns on one Redis lock ("${HOT_KEY}")`,
      `  each turn holds it for ${config.holdMs} ms of work; contention runs for ${config.seconds} s`,
      `  private redis-server on ${server.host}:${server.port}`,
      '',
    ].join('\n'),
  );
}

/** Forks the workers, starts them together once all are up, and collects their reports. */
async function runWorkers(
  config: DemoConfig,
  server: EmbeddedRedis,
  admin: Redis,
  workers: WorkerProcess[],
): Promise<{ reports: WorkerReport[]; startNs: bigint }> {
  for (let number = 1; number <= config.workers; number++) {
    const setup: WorkerSetup = { worker: number, redis: { host: server.host, port: server.port }, loops: config.loops, holdMs: config.holdMs };
    workers.push(new WorkerProcess(number, setup));
  }
  await withTimeout(Promise.all(workers.map((w) => w.ready)), STARTUP_TIMEOUT_MS, 'the workers to start');

  // Reset only now, with every worker connected, so the counts are the lock traffic alone.
  await admin.config('RESETSTAT');
  const startNs = monotonicNs();
  const stopAtNs = startNs + BigInt(Math.round(config.seconds * 1e9));
  for (const worker of workers) worker.go(stopAtNs);

  const stopProgress = showProgress(workers, startNs);
  try {
    const finishing = Promise.all(workers.map((w) => w.finished));
    const reports = await withTimeout(finishing, config.seconds * 1000 + FINISH_GRACE_MS, 'the workers to finish');
    return { reports, startNs };
  } finally {
    stopProgress();
  }
}

/** Runs the demo; resolves to the exit code. */
async function main(): Promise<number> {
  const config = readConfig();
  const server = await EmbeddedRedis.start();
  const admin = new Redis(server.port, server.host);
  const workers: WorkerProcess[] = [];
  try {
    printHeader(config, server);
    const { reports, startNs } = await runWorkers(config, server, admin, workers);
    const commands = parseCommandStats(await admin.info('commandstats'));
    const summary = summarize(config, reports, commands, startNs);
    printSummary(summary);
    return summary.overlaps.length === 0 ? 0 : 1;
  } finally {
    for (const worker of workers) worker.kill();
    admin.disconnect();
    await server.stop();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`\ndemo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
