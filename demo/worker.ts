/**
 * One demo worker process: several concurrent loops that each take the hot key, do a tiny unit of
 * work while holding it, give it back, and start again until the parent's deadline. Every critical
 * section is timestamped so the parent can prove no two ever overlapped, across all processes.
 *
 * Forked by ./main.ts; not meant to be run on its own.
 */
import { Redis } from 'ioredis';
import { catchError, defer, EMPTY, finalize, ignoreElements, lastValueFrom, merge, of, repeat, throwError, timer, type Observable } from 'rxjs';
import { createLocker, isLockError, isLockTimeoutError, type Locker } from '../src/index.js';
import { RedisLockStore } from '../src/redis.js';
import { monotonicNs, SectionRecorder } from '../src/testing.js';
import { countingClient } from '../support/countingClient.js';
import { HOT_KEY, LOCK_TTL_MS, SETUP_ENV, WAIT_TIMEOUT_MS, type ParentMessage, type WorkerMessage, type WorkerSetup } from './protocol.js';

const PROGRESS_EVERY_MS = 250;

/** Everything this process measures; what the parent gets at the end. */
class Tally {
  readonly recorder: SectionRecorder;
  readonly waitsMs: number[] = [];
  timeouts = 0;
  /** Round trips the lock store made (set at the end). */
  storeCommands = 0;

  constructor(owner: string) {
    this.recorder = new SectionRecorder(owner);
  }

  /** One critical section is recorded per lock held, so they double as the acquisition count. */
  get acquisitions(): number {
    return this.recorder.sections.length;
  }
}

/**
 * The work done while holding the lock. `enter` runs when the source is subscribed, which
 * `withLock` does only once the lock is held; `exit` is a `finalize` upstream of `withLock`'s own,
 * so it runs first, before the release is even sent. A correct lock can then never show an overlap.
 */
function criticalSection(tally: Tally, holdMs: number): Observable<unknown> {
  return defer(() => {
    const exit = tally.recorder.enter();
    return timer(holdMs).pipe(finalize(exit));
  });
}

/** One acquisition of the hot key around the work, recording how long the lock took to get. */
function lockedWork(locker: Locker, tally: Tally, holdMs: number): Observable<unknown> {
  const whileLocked = locker.withLock(HOT_KEY);
  return defer(() => {
    const subscribedAt = performance.now();
    const work = defer(() => {
      tally.waitsMs.push(performance.now() - subscribedAt);
      return criticalSection(tally, holdMs);
    });
    return work.pipe(whileLocked);
  });
}

/**
 * One loop: locked work again and again until `stopAtNs`. A wait that runs out is counted, not
 * fatal: under heavy contention that is an expected outcome. Anything else (the store failing)
 * ends the loop with that error.
 */
function loop(work: Observable<unknown>, tally: Tally, stopAtNs: bigint): Observable<never> {
  return work.pipe(
    ignoreElements(),
    catchError((error: unknown) => {
      if (!isLockTimeoutError(error)) return throwError(() => error);
      tally.timeouts++;
      return EMPTY;
    }),
    // The time check sits between runs, so work in progress at the deadline is finished, not cut.
    repeat({ delay: () => (monotonicNs() < stopAtNs ? of(0) : EMPTY) }),
  );
}

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    process.send!(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

/** Resolves on the parent's `go`. Listen before saying `ready`, or the answer could be missed. */
function goSignal(): Promise<bigint> {
  return new Promise((resolve) => {
    process.once('message', (message: ParentMessage) => resolve(BigInt(message.stopAtNs)));
  });
}

function reportOf(tally: Tally): WorkerMessage {
  return {
    type: 'done',
    sections: tally.recorder.sections.map((s) => [String(s.enter), String(s.exit)] as const),
    waitsMs: tally.waitsMs,
    timeouts: tally.timeouts,
    storeCommands: tally.storeCommands,
  };
}

/** A worker whose parent is gone has nobody to report to. */
function exitOrphaned(): never {
  process.exit(1);
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('demo/worker.ts is started by demo/main.ts (npm run demo), not directly');
  const setup = JSON.parse(process.env[SETUP_ENV] ?? 'null') as WorkerSetup;
  process.once('disconnect', exitOrphaned);

  const redis = new Redis(setup.redis.port, setup.redis.host);
  await redis.ping(); // connected before `ready`, so connecting is not part of the measured run
  const tally = new Tally(`process ${setup.worker}`);
  // In your own code: `new RedisLockStore(redis)`; the wrapper only counts round trips.
  const counting = countingClient(redis);
  const store = new RedisLockStore(counting.client);
  const locker = createLocker({ store, ttl: LOCK_TTL_MS, waitTimeout: WAIT_TIMEOUT_MS });
  const work = lockedWork(locker, tally, setup.holdMs);

  const go = goSignal();
  await send({ type: 'ready' });
  const stopAtNs = await go;

  // Best effort: if the parent is gone, the disconnect listener ends this process anyway.
  const reportProgress = () => send({ type: 'progress', acquisitions: tally.acquisitions }).catch(() => undefined);
  const progress = setInterval(reportProgress, PROGRESS_EVERY_MS);
  try {
    const loops = Array.from({ length: setup.loops }, () => loop(work, tally, stopAtNs));
    await lastValueFrom(merge(...loops), { defaultValue: undefined });
  } finally {
    clearInterval(progress);
  }
  // QUIT is answered after every command already sent, so the last releases reach Redis first; a
  // bare disconnect could drop one and leave the key held until its TTL. Not on failure, though: a
  // Redis that stopped answering would never answer QUIT either (exiting drops the connection).
  await locker.close();
  store.close();
  await redis.quit();
  tally.storeCommands = counting.roundTrips;

  await send(reportOf(tally));
  process.off('disconnect', exitOrphaned);
  process.disconnect();
}

main().catch((error: unknown) => {
  // The library's own errors say all there is to say in their message; anything else is a bug.
  console.error(`demo worker ${process.pid} failed:`, isLockError(error) ? error.message : error);
  process.exit(1);
});
