/**
 * Child processes for tests that must see a process exit by itself: fork a fixture under tsx,
 * read its IPC messages one type at a time, bound every wait, and kill it if it overstays.
 */
import { fork, type ChildProcess } from 'node:child_process';

/** A message from a fixture: `{ type, ... }`. */
export interface ChildMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** Forks `file` (TypeScript, run with tsx) with `settings` as JSON in the env variable `envName`. */
export function forkFixture(file: string, envName: string, settings: unknown): ChildProcess {
  return fork(file, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, [envName]: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Messages from a child, taken one type at a time; an exit before the message fails the wait. */
export function messagesOf(child: ChildProcess): <M extends { readonly type: string } = ChildMessage>(type: string) => Promise<M> {
  const queue: ChildMessage[] = [];
  let waiting: { type: string; resolve: (m: ChildMessage) => void; reject: (e: Error) => void } | undefined;
  child.on('message', (message) => {
    queue.push(message as ChildMessage);
    deliver();
  });
  child.on('exit', (code, signal) => waiting?.reject(new Error(`child exited (code ${code}, signal ${signal}) while the test waited for '${waiting.type}'`)));
  function deliver(): void {
    if (waiting === undefined) return;
    const index = queue.findIndex((m) => m.type === waiting!.type);
    if (index < 0) return;
    const [message] = queue.splice(index, 1);
    const { resolve } = waiting;
    waiting = undefined;
    resolve(message!);
  }
  return <M extends { readonly type: string }>(type: string) =>
    new Promise<M>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        const index = queue.findIndex((m) => m.type === type);
        if (index >= 0) return resolve(queue.splice(index, 1)[0] as unknown as M);
        return reject(new Error(`child already exited while the test waited for '${type}'`));
      }
      waiting = { type, resolve: resolve as (m: ChildMessage) => void, reject };
      deliver();
    });
}

/**
 * How long a test waits for a forked fixture's first message ('ready'): the child imports the
 * library through tsx, which took over 15 s once in a fresh-clone CI on a loaded 2-CPU machine
 * (1.8 s when quiet). Within the 60 s test timeout, with room for what the test waits for after.
 */
export const CHILD_READY_MS = 35_000;

/** `promise`, or an error after `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timeout = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timeout));
}

export type ExitOutcome = { code: number | null; signal: string | null } | 'still running';

/** Resolves with how the child exited, or kills it after `ms` and resolves with 'still running'. */
export function exitOf(child: ChildProcess, ms: number): Promise<ExitOutcome> {
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

/** Kills the child if it still runs (for finally blocks). */
export function killIfRunning(child: ChildProcess | undefined): void {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
