/**
 * The parent's side of the worker processes: forks them once (booting TypeScript through tsx
 * takes about half a second of CPU per process), pins them to the client CPU, and drives runs
 * through the ready → go → done handshake. A run that breaks (a worker exits or stops answering)
 * costs the pool its processes: they are killed and forked anew for the next run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pinProcess } from './pinning.js';
import type { ParentMessage, ProbeReport, WorkerMessage, WorkerReport } from './protocol.js';

/** What starts a run in a worker: a lock scenario (`run`) or a probe. */
export type RunOrder = Extract<ParentMessage, { type: 'run' | 'probe' }>;

const WORKER_PATH = fileURLToPath(new URL('./worker.ts', import.meta.url));
const BOOT_TIMEOUT_MS = 60_000;
/** Building a library and warming it up; a variant that waits on a stuck Redis must not hang the bench. */
const READY_TIMEOUT_MS = 60_000;

class Worker {
  private readonly child: ChildProcess;
  private readonly queue: WorkerMessage[] = [];
  private waiting: { resolve: (m: WorkerMessage) => void; reject: (e: Error) => void } | undefined;
  private exitError: Error | undefined;

  constructor(readonly index: number) {
    this.child = fork(WORKER_PATH, [], {
      execArgv: ['--import', 'tsx', '--expose-gc'],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: WorkerMessage) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (waiting) waiting.resolve(message);
      else this.queue.push(message);
    });
    this.child.once('exit', (code, signal) =>
      this.onGone(new Error(`worker ${index + 1} (pid ${this.child.pid}) ${signal ? `was killed by ${signal}` : `exited with code ${code}`}`)),
    );
    this.child.once('error', (error) => this.onGone(error));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitError === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  send(message: ParentMessage): void {
    if (this.alive) this.child.send(message);
  }

  /** The next message, or a rejection when the worker dies or `timeoutMs` passes first. */
  next(timeoutMs: number, what: string): Promise<WorkerMessage> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.exitError) return Promise.reject(this.exitError);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(new Error(`worker ${this.index + 1} gave no answer within ${Math.round(timeoutMs / 1000)} s (${what})`));
      }, timeoutMs);
      this.waiting = {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  waitForExit(timeoutMs: number): Promise<void> {
    if (!this.alive) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.kill();
        resolve();
      }, timeoutMs);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private onGone(error: Error): void {
    this.exitError ??= error;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(this.exitError);
  }
}

export type RunResult =
  | { readonly kind: 'done'; readonly reports: WorkerReport[]; readonly probes: ProbeReport[]; readonly startNs: bigint; readonly stopAtNs: bigint }
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'failed'; readonly message: string };

export class WorkerPool {
  private workers: Worker[] = [];
  /** Every process ever forked, so that an interrupt can kill whatever is left. */
  private readonly everyone: Worker[] = [];
  /** Set by shutdown/killAll: no process is forked after that. */
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly clientCpu: number | undefined,
  ) {}

  async start(): Promise<void> {
    if (this.closed) throw new Error('the worker pool was shut down');
    this.workers = Array.from({ length: this.size }, (_, i) => new Worker(i));
    this.everyone.push(...this.workers);
    const booted = await Promise.all(this.workers.map((w) => w.next(BOOT_TIMEOUT_MS, 'booting')));
    for (const message of booted) if (message.type !== 'started') throw new Error(`worker sent ${message.type} while booting`);
    if (this.clientCpu !== undefined) for (const w of this.workers) if (w.pid !== undefined) pinProcess(w.pid, this.clientCpu);
  }

  /**
   * One run on the first `orders.length` workers. `beforeGo` runs once they are all ready (built
   * and warmed up), right before they are told to start; it returns the run's time origin and
   * deadline. Lock runs answer `done`, probes `probed`.
   */
  async run(orders: readonly RunOrder[], beforeGo: () => Promise<{ startNs: bigint; stopAtNs: bigint }>, deadlineMs: number): Promise<RunResult> {
    if (orders.length > this.workers.length) throw new Error(`a run needs ${orders.length} workers, the pool has ${this.workers.length}`);
    if (this.workers.some((w) => !w.alive)) await this.restart();
    const workers = this.workers.slice(0, orders.length);
    try {
      workers.forEach((w, i) => w.send(orders[i]!));
      const answers = await Promise.all(workers.map((w) => w.next(READY_TIMEOUT_MS, 'getting ready')));
      const notReady = answers.find((a) => a.type !== 'ready');
      if (notReady) {
        // Stand the others down, so they are idle again for the next run.
        await Promise.all(
          workers.map(async (w, i) => {
            if (answers[i]!.type !== 'ready') return;
            w.send({ type: 'cancel' });
            await w.next(READY_TIMEOUT_MS, 'standing down');
          }),
        );
        if (notReady.type === 'skipped') return { kind: 'skipped', reason: notReady.reason };
        if (notReady.type === 'failed') return { kind: 'failed', message: notReady.message };
        return { kind: 'failed', message: `worker answered ${notReady.type} instead of ready` };
      }
      const { startNs, stopAtNs } = await beforeGo();
      for (const w of workers) w.send({ type: 'go', startNs: String(startNs), stopAtNs: String(stopAtNs) });
      const finals = await Promise.all(workers.map((w) => w.next(deadlineMs, 'running')));
      const failed = finals.find((m) => m.type !== 'done' && m.type !== 'probed');
      if (failed) return { kind: 'failed', message: failed.type === 'failed' ? failed.message : `worker answered ${failed.type}` };
      return {
        kind: 'done',
        reports: finals.filter((m): m is WorkerMessage & { type: 'done' } => m.type === 'done'),
        probes: finals.flatMap((m) => (m.type === 'probed' ? [m.report] : [])),
        startNs,
        stopAtNs,
      };
    } catch (error) {
      if (!this.closed) await this.restart();
      return { kind: 'failed', message: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Process ids of the live workers. */
  pids(): number[] {
    return this.workers.filter((w) => w.alive && w.pid !== undefined).map((w) => w.pid!);
  }

  /** Kills every worker and forks a fresh set. */
  async restart(): Promise<void> {
    for (const w of this.workers) w.kill();
    await this.start();
  }

  /** Asks the workers to exit, killing those that do not within a few seconds. */
  async shutdown(): Promise<void> {
    this.closed = true;
    for (const w of this.workers) w.send({ type: 'exit' });
    await Promise.all(this.workers.map((w) => w.waitForExit(5_000)));
    this.killAll();
  }

  /** Immediate: for interrupts and failures. */
  killAll(): void {
    this.closed = true;
    for (const w of this.everyone) w.kill();
  }
}
