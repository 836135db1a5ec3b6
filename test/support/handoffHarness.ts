/**
 * Tools for the hand-off race tests (test/redis/handoff*.test.ts):
 * - {@link InterceptStore}: a RedisLockStore seen through a log and hooks, so a test can delay a
 *   call on its way to Redis (and do something meanwhile, such as the holder's release), make it
 *   fail without reaching Redis, hold or rewrite an answer Redis gave before the engine hears it,
 *   see the wake-up signals the engine is given, and check afterwards in what order calls were sent
 *   and settled;
 * - {@link hookCommands}: the same one level lower, on an ioredis client, for the commands ioredis
 *   sends for a script (EVALSHA, and the EVAL it re-sends after a NOSCRIPT answer);
 * - {@link recordedLocker}: a locker whose events are recorded, closed after the test;
 * - helpers that read a lock's Redis line.
 */
import type { Redis } from 'ioredis';
import { createLocker, type LockerOptions, type LockEvent, type Locker } from '../../src/index.js';
import type { RedisLockStore } from '../../src/redis.js';
import { lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import type { BatchExtendStore, ExtendRequest, KeyCheckingStore, LeaveResult, QueueingStore, WakeSignal } from '../../src/store/capabilities.js';
import type { AcquireResult, ExtendOutcome, LockStore, ReleasedGrant } from '../../src/store/LockStore.js';

export type StoreOp = 'tryAcquire' | 'tryAcquireInLine' | 'release' | 'extend' | 'extendMany' | 'leave';

/** One call the engine made on an {@link InterceptStore}. */
export interface StoreCallLog {
  readonly seq: number;
  readonly op: StoreOp;
  readonly key: string;
  readonly token: string;
  /** tryAcquireInLine only. */
  readonly place?: 'keep' | 'leave';
  readonly ttl?: number;
  /** performance.now() when the engine made the call. */
  readonly calledAt: number;
  /** Acquire calls of the same token not settled yet when this call was made. */
  readonly acquiresInFlight: number;
  /** Leave calls of the same token not settled yet when this call was made. */
  readonly leavesInFlight: number;
  /** When the hook let it go on to Redis (undefined: the hook failed it, it never reached Redis). */
  forwardedAt?: number;
  /** When the engine heard the answer or error (after `afterHook`, if any). */
  settledAt?: number;
  /** The answer as the engine hears it (after `rewrite`); set once Redis answered, before `afterHook` runs. */
  result?: unknown;
  error?: unknown;
}

/**
 * Decides what happens to a call: resolve to let it through (after a delay, if it likes), reject to
 * fail it. As `hook`: before the call goes to Redis (a rejection: it never reaches Redis); as
 * `afterHook`: once Redis answered, before the engine hears it (a rejection: the engine hears that
 * error instead of the answer).
 */
export type StoreHook = (call: StoreCallLog) => Promise<void> | void;

/**
 * The engine's view of a RedisLockStore, with every call logged and passed through `hook` (and
 * `afterHook`, `rewrite` when set), and every wake-up signal recorded. It offers what the Redis
 * store offers (line, wake-up, batched extension, key check), so the engine uses it exactly as it
 * would use the store itself.
 */
export class InterceptStore implements LockStore, QueueingStore, BatchExtendStore, KeyCheckingStore {
  readonly log: StoreCallLog[] = [];
  /** Runs before a call goes to Redis. */
  hook: StoreHook | undefined;
  /**
   * Runs after Redis answered a call (`result` set), before the engine hears the answer; not for an
   * error. The one in place when the call goes to Redis.
   */
  afterHook: StoreHook | undefined;
  /** Rewrites the answer of an acquire call (tryAcquire, tryAcquireInLine): the one in place when the call goes to Redis. */
  rewrite: ((result: AcquireResult) => AcquireResult) | undefined;
  /** The wake-up signals the store's `watch` gave the engine, every watch's, in order. */
  readonly signals: WakeSignal[] = [];
  /** The most calls ever in flight at once (made and not settled, as {@link inFlight} counts them). */
  maxInFlight = 0;
  private seq = 0;
  private readonly acquiring = new Map<string, number>();
  private readonly leaving = new Map<string, number>();

  constructor(readonly inner: RedisLockStore) {}

  tryAcquire(key: string, token: string, ttlMs: number, fences?: number): Promise<AcquireResult> {
    return this.run({ op: 'tryAcquire', key, token, ttl: ttlMs }, () => this.rewritten(this.inner.tryAcquire(key, token, ttlMs, fences)));
  }

  tryAcquireInLine(key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave'): Promise<AcquireResult> {
    return this.run({ op: 'tryAcquireInLine', key, token, ttl: ttlMs, place }, () =>
      this.rewritten(this.inner.tryAcquireInLine(key, token, ttlMs, fences, place)),
    );
  }

  release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
    return this.run({ op: 'release', key, token }, () => this.inner.release(key, token, grant));
  }

  extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    return this.run({ op: 'extend', key, token, ttl: ttlMs }, () => this.inner.extend(key, token, ttlMs));
  }

  extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    const first = requests[0]!;
    return this.run({ op: 'extendMany', key: first.key, token: first.token }, () => this.inner.extendMany(requests));
  }

  leave(key: string, token: string): Promise<LeaveResult> {
    return this.run({ op: 'leave', key, token }, () => this.inner.leave(key, token));
  }

  get watch(): RedisLockStore['watch'] {
    const watch = this.inner.watch;
    if (watch === undefined) return undefined;
    return (key, token, listener) =>
      watch(key, token, (signal) => {
        this.signals.push(signal);
        listener(signal);
      });
  }

  checkKey(key: string): void {
    this.inner.checkKey(key);
  }

  /** Calls made and not settled yet. */
  get inFlight(): number {
    return this.log.filter((c) => c.settledAt === undefined).length;
  }

  calls(op: StoreOp, place?: 'keep' | 'leave'): StoreCallLog[] {
    return this.log.filter((c) => c.op === op && (place === undefined || c.place === place));
  }

  private rewritten(answer: Promise<AcquireResult>): Promise<AcquireResult> {
    const rewrite = this.rewrite;
    return rewrite === undefined ? answer : answer.then(rewrite);
  }

  private run<T>(call: Omit<StoreCallLog, 'seq' | 'calledAt' | 'acquiresInFlight' | 'leavesInFlight'>, send: () => Promise<T>): Promise<T> {
    const counter = call.op === 'tryAcquire' || call.op === 'tryAcquireInLine' ? this.acquiring : call.op === 'leave' ? this.leaving : undefined;
    const record: StoreCallLog = {
      ...call,
      seq: ++this.seq,
      calledAt: performance.now(),
      acquiresInFlight: this.acquiring.get(call.token) ?? 0,
      leavesInFlight: this.leaving.get(call.token) ?? 0,
    };
    this.log.push(record);
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    counter?.set(call.token, (counter.get(call.token) ?? 0) + 1);
    const settle = () => {
      record.settledAt = performance.now();
      counter?.set(call.token, (counter.get(call.token) ?? 1) - 1);
    };
    return (async () => {
      await this.hook?.(record);
      record.forwardedAt = performance.now();
      const afterHook = this.afterHook;
      if (afterHook === undefined) return send();
      const value = await send();
      record.result = value;
      await afterHook(record);
      return value;
    })().then(
      (value) => {
        record.result = value;
        settle();
        return value;
      },
      (error: unknown) => {
        record.error = error;
        settle();
        throw error;
      },
    );
  }
}

/** The shape of an ioredis command as `sendCommand` receives it (enough for the hook). */
export interface SentCommand {
  readonly name: string;
  readonly args: unknown[];
}

export interface CommandLog {
  readonly seq: number;
  readonly at: number;
  readonly name: string;
  /** The store's script it runs, if any. */
  readonly script?: 'acquire' | 'release' | 'extend';
  /** The lock key (first key) of a store script. */
  readonly key?: string;
  /** The token argument of an acquire or release script. */
  readonly token?: string;
}

/**
 * Patches `client.sendCommand` so that every command is logged and seen by `hook`, which may hold
 * a script command back (by returning a promise: the command goes when it resolves). Only script
 * commands are held: the commands of a MULTI or pipeline are written together and pass at once.
 */
export function hookCommands(client: Redis, hook: (command: CommandLog) => Promise<void> | void): CommandLog[] {
  const log: CommandLog[] = [];
  const original = client.sendCommand.bind(client) as (command: SentCommand, ...rest: unknown[]) => unknown;
  const bySha = new Map<string, CommandLog['script']>([
    [luaScripts.acquire.sha, 'acquire'],
    [luaScripts.release.sha, 'release'],
    [luaScripts.extend.sha, 'extend'],
  ]);
  let seq = 0;
  (client as unknown as { sendCommand: (command: SentCommand, ...rest: unknown[]) => unknown }).sendCommand = (command, ...rest) => {
    const script = command.name === 'evalsha' || command.name === 'eval' ? bySha.get(String(command.args[0])) : undefined;
    // args: sha, numberOfKeys, keys…, token, …
    const numberOfKeys = script === undefined ? 0 : Number(command.args[1]);
    const token = script === 'acquire' || script === 'release' ? String(command.args[2 + numberOfKeys]) : undefined;
    const key = script === undefined ? undefined : String(command.args[2]);
    const entry: CommandLog = { seq: ++seq, at: performance.now(), name: command.name, script, key, token };
    log.push(entry);
    const held = hook(entry);
    // Only a script command may be held back (see above).
    if (held === undefined || script === undefined) return original(command, ...rest);
    // (the command's own promise, returned below, carries its answer or error to the caller: this
    // chain only sends it, and must not report a NOSCRIPT answer as unhandled a second time)
    held.then(() => original(command, ...rest)).catch(() => undefined);
    return (command as unknown as { promise: Promise<unknown> }).promise;
  };
  return log;
}

/** The Redis keys of lock key `lockKey` (as the store receives it, i.e. with the locker's prefix). */
export function keysOf(lockKey: string): { lock: string; line: string; places: string; fence: string } {
  const [lock, fence, line, places] = lockKeys(lockKey);
  return { lock, fence, line, places };
}

/** The line of `lockKey`: tokens in order with their arrival scores. */
export async function lineOf(admin: Redis, lockKey: string): Promise<Array<{ token: string; score: number }>> {
  const flat = await admin.zrange(keysOf(lockKey).line, '0', '-1', 'WITHSCORES');
  const line: Array<{ token: string; score: number }> = [];
  for (let i = 0; i < flat.length; i += 2) line.push({ token: flat[i]!, score: Number(flat[i + 1]) });
  return line;
}

/** Runs the release script for `token` by its source (EVAL): a client with the script loaded, whatever the cache holds. */
export function releaseByEval(admin: Redis, lockKey: string, token: string): Promise<unknown> {
  const { lock, fence, line, places } = keysOf(lockKey);
  return admin.eval(luaScripts.release.source, 4, lock, fence, line, places, token);
}

/** A locker whose events are recorded; `closers` (run after the test) close it. */
export function recordedLocker(options: LockerOptions, closers: Array<() => unknown>): { locker: Locker; events: LockEvent[] } {
  const locker = createLocker(options);
  const events: LockEvent[] = [];
  const subscription = locker.events$.subscribe((e) => events.push(e));
  closers.push(
    () => locker.close(),
    () => subscription.unsubscribe(),
  );
  return { locker, events };
}
