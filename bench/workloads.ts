/**
 * What a worker process does during a run: the acquire/hold/release loops, or the cancel storm,
 * recording every critical section on the machine-wide monotonic clock.
 */
import { AcquireTimeout, type Held, type LockAdapter, type Limits, type StormOutcome } from './adapters/types.js';
import type { Role, StormTally } from './protocol.js';
import { lockNames, type Hold, type Primitive, type ScenarioSpec } from './scenarios.js';

/** `process.hrtime.bigint()`: CLOCK_MONOTONIC on Linux, the same clock in every process (as `monotonicNs` in rxjs-lock/testing). */
export const nowNs = (): bigint => process.hrtime.bigint();

const MAX_ERRORS = 200;
const ERROR_SAMPLES = 5;

/** A column of numbers in fixed-size typed chunks: appending never copies, and the GC has nothing in it to trace. */
class Column {
  private static readonly CHUNK = 65_536;
  private readonly chunks: Float64Array[] = [];
  private last = new Float64Array(0);
  private used = 0;
  length = 0;

  push(value: number): void {
    if (this.used === this.last.length) {
      this.last = new Float64Array(Column.CHUNK);
      this.chunks.push(this.last);
      this.used = 0;
    }
    this.last[this.used++] = value;
    this.length++;
  }

  /** The values as a plain array (for the report, after the run). */
  toArray(): number[] {
    const out = new Array<number>(this.length);
    let i = 0;
    for (const chunk of this.chunks) for (let j = 0; j < chunk.length && i < this.length; j++) out[i++] = chunk[j]!;
    return out;
  }
}

const ROLES: readonly Role[] = ['lock', 'permit', 'read', 'write'];

/**
 * Every acquisition of one worker, as parallel columns, turned into plain arrays for the report
 * (compact over IPC). The columns keep the harness's own garbage out of the run: a hot key
 * records over a hundred thousand acquisitions a second, and growing plain arrays that fast made
 * old-space collections — pauses of tens of ms in whichever process held the key — part of the
 * waits measured.
 */
export class Recorder {
  private readonly columns = {
    loop: new Column(),
    keyIndex: new Column(),
    role: new Column(),
    enterNs: new Column(),
    exitNs: new Column(),
    waitMs: new Column(),
    pairMs: new Column(),
  };
  timeouts = 0;
  errors = 0;
  readonly errorSamples: string[] = [];

  constructor(
    readonly startNs: bigint,
    private readonly recordPairs: boolean,
  ) {}

  /** `t0` acquire started, `enter` lock held, `exit` release about to be called, `done` release resolved. */
  add(loop: number, keyIndex: number, role: Role, t0: bigint, enter: bigint, exit: bigint, done?: bigint): void {
    const c = this.columns;
    c.loop.push(loop);
    c.keyIndex.push(keyIndex);
    c.role.push(ROLES.indexOf(role));
    c.enterNs.push(Number(enter - this.startNs));
    c.exitNs.push(Number(exit - this.startNs));
    c.waitMs.push(Number(enter - t0) / 1e6);
    if (this.recordPairs && done !== undefined) c.pairMs.push(Number(done - t0) / 1e6);
  }

  /** The recorded columns as the worker's report carries them. */
  columnsForReport(): { loop: number[]; keyIndex: number[]; role: Role[]; enterNs: number[]; exitNs: number[]; waitMs: number[]; pairMs: number[] } {
    const c = this.columns;
    return {
      loop: c.loop.toArray(),
      keyIndex: c.keyIndex.toArray(),
      role: c.role.toArray().map((i) => ROLES[i]!),
      enterNs: c.enterNs.toArray(),
      exitNs: c.exitNs.toArray(),
      waitMs: c.waitMs.toArray(),
      pairMs: c.pairMs.toArray(),
    };
  }

  error(error: unknown): void {
    this.errors++;
    if (this.errorSamples.length < ERROR_SAMPLES) this.errorSamples.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    if (this.errors >= MAX_ERRORS) throw new Error(`${this.errors} errors, giving up; first: ${this.errorSamples[0]}`);
  }
}

function holder(hold: Hold): () => Promise<void> | undefined {
  switch (hold.kind) {
    case 'none':
      return () => undefined;
    case 'timer':
      return () => new Promise<void>((resolve) => setTimeout(resolve, hold.ms));
    case 'yield':
      return () => new Promise<void>((resolve) => setImmediate(resolve));
  }
}

const limitsOf = (spec: ScenarioSpec): Limits => ({ waitTimeoutMs: spec.waitTimeoutMs, ttlMs: spec.ttlMs });

/** Takes one lock of `name` for an acquisition in `role`. */
export type Take = (name: string, role: Role, limits: Limits) => Promise<Held>;

/**
 * How a run takes its locks: the adapter's mutex (every role alike), or its semaphore or
 * read-write lock. Throws, naming what is missing, when the library does not have it.
 */
export function takerFor(adapter: LockAdapter, primitive: Primitive, library: string): Take {
  if (primitive.kind === 'mutex') return (name, _role, limits) => adapter.acquire(name, limits);
  const shared = adapter.shared;
  const wanted = primitive.kind === 'semaphore' ? (['permit'] as const) : (['read', 'write'] as const);
  const missing = wanted.filter((kind) => !shared?.offers.includes(kind));
  if (shared === undefined || missing.length > 0) throw new Error(`${library} has no ${missing.join(' or ')} lock for a ${primitive.kind} scenario`);
  if (primitive.kind === 'semaphore') {
    const take = { kind: 'permit', limit: primitive.limit } as const;
    return (name, _role, limits) => shared.acquire(name, take, limits);
  }
  const read = { kind: 'read' } as const;
  const write = { kind: 'write' } as const;
  return (name, role, limits) => shared.acquire(name, role === 'write' ? write : read, limits);
}

/** A small seeded generator of numbers in [0, 1) (mulberry32): the same seed, the same draws. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * The roles of one loop's acquisitions, in order: `lock` for a mutex, `permit` for a semaphore;
 * on a read-write lock a write with probability `writeShare`, else a read, from a generator
 * seeded by the scenario's seed, the worker and the loop (so every run of the scenario, whatever
 * it takes, draws the same sequence in each loop).
 */
export function rolesOf(primitive: Primitive, worker: number, loop: number): () => Role {
  switch (primitive.kind) {
    case 'mutex':
      return () => 'lock';
    case 'semaphore':
      return () => 'permit';
    case 'read-write': {
      const random = seededRandom(Math.imul(primitive.seed, 0x9e3779b1) ^ Math.imul(worker + 1, 0x85ebca6b) ^ Math.imul(loop + 1, 0xc2b2ae35));
      return () => (random() < primitive.writeShare ? 'write' : 'read');
    }
  }
}

/** The roles a warm-up goes through, in turn, so every path the run takes is compiled and its scripts loaded. */
export function warmupRoles(primitive: Primitive): readonly Role[] {
  switch (primitive.kind) {
    case 'mutex':
      return ['lock'];
    case 'semaphore':
      return ['permit'];
    case 'read-write':
      return ['read', 'write'];
  }
}

/**
 * Sequential acquire + release of a private key, so code paths are compiled and scripts loaded,
 * in each of `roles` in turn. `whileFirstHeld` runs once, while the first lock is held (the
 * worker checks the key name there).
 */
export async function warmUp(take: Take, roles: readonly Role[], spec: ScenarioSpec, name: string, whileFirstHeld: () => Promise<void>): Promise<void> {
  const until = nowNs() + BigInt(Math.round(spec.warmupMs * 1e6));
  const limits = limitsOf(spec);
  let rounds = 0;
  while (rounds < Math.max(3, 2 * roles.length) || nowNs() < until) {
    const held = await take(name, roles[rounds % roles.length]!, limits);
    if (rounds === 0) await whileFirstHeld();
    await held.release();
    rounds++;
  }
}

/**
 * The scenario's loops: acquire, hold, release, until the deadline or the number of tries. Each
 * loop draws its acquisitions' roles from `rolesOf(spec.primitive, worker, loop)`.
 */
export async function runLoops(take: Take, spec: ScenarioSpec, worker: number, rec: Recorder, stopAtNs: bigint): Promise<void> {
  const names = lockNames(spec);
  const limits = limitsOf(spec);
  const hold = holder(spec.hold);
  const stop = spec.stop;
  const more = stop.kind === 'time' ? () => nowNs() < stopAtNs : (tries: number) => tries < stop.perLoop;

  const loop = async (i: number) => {
    const keyIndex = spec.keyMode === 'shared' ? 0 : i;
    const name = names[keyIndex]!;
    const nextRole = rolesOf(spec.primitive, worker, i);
    for (let tries = 0; more(tries); tries++) {
      const role = nextRole();
      const t0 = nowNs();
      let held: Held;
      try {
        held = await take(name, role, limits);
      } catch (error) {
        if (error instanceof AcquireTimeout) rec.timeouts++;
        else rec.error(error);
        continue;
      }
      const enter = nowNs();
      await hold();
      const exit = nowNs();
      await held.release();
      rec.add(i, keyIndex, role, t0, enter, exit, nowNs());
    }
  };
  await Promise.all(Array.from({ length: spec.loopsPerProcess }, (_, i) => loop(i)));
}

/**
 * The cancel storm: `concurrency` loops start acquisitions of random hot keys until
 * `acquisitions` have started; each is cancelled after a random delay, while waiting or holding.
 */
export async function runStorm(adapter: LockAdapter, spec: ScenarioSpec, rec: Recorder): Promise<StormTally> {
  const shape = spec.storm;
  if (!shape) throw new Error(`${spec.name} is not a storm scenario`);
  const names = lockNames(spec);
  const limits = limitsOf(spec);
  const counts: Record<StormOutcome, number> = { held: 0, cancelled: 0, timeout: 0, error: 0 };
  let started = 0;

  const loop = async (i: number) => {
    while (started < shape.acquisitions) {
      started++;
      const keyIndex = Math.floor(Math.random() * shape.keys);
      const controller = new AbortController();
      const t0 = nowNs();
      let enter: bigint | undefined;
      const section = {
        enter: () => {
          enter = nowNs();
        },
        exit: () => {
          if (enter !== undefined) rec.add(i, keyIndex, 'lock', t0, enter, nowNs());
        },
      };
      const outcome = adapter.holdUntilAborted(names[keyIndex]!, limits, controller.signal, section);
      const timer = setTimeout(() => controller.abort(), Math.random() * shape.maxCancelMs);
      let result: StormOutcome;
      try {
        result = await outcome;
      } catch (error) {
        rec.error(error);
        result = 'error';
      } finally {
        clearTimeout(timer);
      }
      counts[result]++;
    }
  };
  await Promise.all(Array.from({ length: shape.concurrency }, (_, i) => loop(i)));
  rec.timeouts += counts.timeout;
  return { attempts: started, held: counts.held, cancelled: counts.cancelled, timeouts: counts.timeout, errors: counts.error };
}
