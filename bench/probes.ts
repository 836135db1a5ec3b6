/**
 * The worker side of the probes (./scenarios.ts, ProbeSpec): measurements that are not a lock
 * library against its peers, run by the same pinned worker processes as every other run.
 *
 * - engine-cpu: rxjs-lock's own CPU per acquire + release pair on the in-memory store.
 * - floor: one PING round trip, one cross-process pub/sub hop, and the same hop right after the
 *   sender had the client CPU for a turn, in the hot-key layout.
 *
 * rxjs-lock is loaded from the build in ../dist, like ./adapters/rxjsLock.ts (the same module
 * instance: ESM caches it by URL).
 */
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import type * as Core from '../src/index.js';
import { closeAll, connectReady } from './connections.js';
import type { EngineMethod, EngineRound, ProbeReport, ProbeSetup } from './protocol.js';
import { floorMeasuredMs, type EngineCpuSpec, type FloorSpec } from './scenarios.js';
import { nowNs } from './workloads.js';

const { createLocker, MemoryLockStore } = (await import(new URL('../dist/esm/index.js', import.meta.url).href)) as typeof Core;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** After the last part (the turn ring) ends: time for the last message in flight to arrive before closing. */
const HOP_DRAIN_MS = 200;

/** A probe prepared up to `ready`: `run` starts at the run's time origin and resolves with the report. */
export interface PreparedProbe {
  run(startNs: bigint): Promise<ProbeReport>;
  close(): Promise<void>;
}

export async function prepareProbe(setup: ProbeSetup): Promise<PreparedProbe> {
  const probe = setup.probe;
  return probe.name === 'engine-cpu' ? prepareEngineCpu(probe) : prepareFloor(setup, probe);
}

// ---------------------------------------------------------------------------------------------
// engine-cpu

/**
 * The smallest promise-based mutex (what async-mutex's `Mutex` does, minus its options): the
 * floor of any lock whose acquire is a promise, for reference beside the engine.
 */
class PromiseMutex {
  private locked = false;
  private readonly waiters: Array<() => void> = [];

  acquire(): Promise<() => void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve(this.release);
    }
    return new Promise((resolve) => this.waiters.push(() => resolve(this.release)));
  }

  private readonly release = (): void => {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  };
}

const ENGINE_KEY = 'bench:engine';
/** Pairs run between two looks at the clock. */
const BATCH = 256;
const METHODS: readonly EngineMethod[] = ['acquire', 'withLock', 'mutex', 'store'];

function prepareEngineCpu(spec: EngineCpuSpec): Promise<PreparedProbe> {
  // createLocker() with no options: the default in-memory store and every default setting.
  const locker = createLocker();
  const mutex = new PromiseMutex();
  // The store alone (its own promise API, as the engine calls it): subtracted from a pair's CPU,
  // it leaves what the engine itself costs.
  const store = new MemoryLockStore();
  const one = of(1);

  // One loop per method, written out, so that no wrapper call is measured with it.
  const batch = async (method: EngineMethod, n: number): Promise<void> => {
    switch (method) {
      case 'acquire':
        for (let i = 0; i < n; i++) {
          const lease = await firstValueFrom(locker.acquire(ENGINE_KEY));
          await lease.release();
        }
        return;
      case 'withLock':
        // Completes once the lock is given back (see Locker.withLock), so pairs do not overlap.
        for (let i = 0; i < n; i++) await lastValueFrom(one.pipe(locker.withLock<number>(ENGINE_KEY)));
        return;
      case 'mutex':
        for (let i = 0; i < n; i++) {
          const release = await mutex.acquire();
          release();
        }
        return;
      case 'store':
        for (let i = 0; i < n; i++) {
          await store.tryAcquire(ENGINE_KEY, 'bench-token', 30_000, 16);
          await store.release(ENGINE_KEY, 'bench-token');
        }
        return;
    }
  };

  /** Runs `method` in batches for `ms`; returns pairs, CPU and wall time. */
  const timed = async (method: EngineMethod, ms: number): Promise<EngineRound> => {
    const cpu0 = process.cpuUsage();
    const t0 = nowNs();
    const until = t0 + BigInt(Math.round(ms * 1e6));
    let pairs = 0;
    do {
      await batch(method, BATCH);
      pairs += BATCH;
    } while (nowNs() < until);
    const wallUs = Number(nowNs() - t0) / 1e3;
    const cpu = process.cpuUsage(cpu0);
    return { method, pairs, cpuUs: cpu.user + cpu.system, wallUs };
  };

  return Promise.resolve({
    async run() {
      // Warm-up after `go`, so the parent's noise measurement covers it too.
      let warmupPairs = 0;
      for (const method of METHODS) warmupPairs += (await timed(method, spec.warmupMs / METHODS.length)).pairs;
      const rounds: EngineRound[] = [];
      for (let r = 0; r < spec.rounds; r++) {
        // A different method first in each round, so a burst of noise does not always hit the same one.
        for (let m = 0; m < METHODS.length; m++) rounds.push(await timed(METHODS[(r + m) % METHODS.length]!, spec.roundMs));
      }
      return { kind: 'engine-cpu', rounds, warmupPairs };
    },
    close: async () => undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// floor

/**
 * Every worker of the hot-key layout takes part, with what each process of a push-based lock has
 * there: a command connection and a subscriber connection subscribed to its own channel.
 *
 * - First half, worker 0 sends sequential PINGs (the others stay idle).
 * - Second half, workers 0 and 1 pass a timestamp back and forth: each receiver records
 *   `now − timestamp` and at once PUBLISHes its own timestamp to the other. That chain is a hot
 *   key handed from process to process: one process's command reaches Redis, Redis pushes to a
 *   process that is sleeping on its socket, on the other CPU.
 * - Workers 2–7 stay idle but alive, connected and subscribed, the whole time. That is what the
 *   other processes of a push-based lock do while one process hands the key to the next: they
 *   sleep on their subscriber until a grant arrives. Busy-looping them instead would add CPU
 *   run-queue time that depends on the scheduler's time slices, not on the physical path of a
 *   hand-off, and would raise the floor the hand-off target is judged against; with them idle,
 *   the floor is the lowest a hand-off in this layout can reach, which is what a floor is for.
 * - Third part, a turn goes round all the workers: on its message each worker keeps the CPU busy for
 *   `turnMs` (a hot-key holder's turn: a 0 ms-hold cohort runs flat out), then publishes to the
 *   next, and the hop to that one is recorded. No lock either, and no other work anywhere: what the
 *   machine charges for waking a process right after another one had the client CPU for a turn. On
 *   the 2-vCPU machine of 2026-11-28 that hop was several times the idle one (0.29–0.46 ms against
 *   0.05–0.14, with 2 to 8 processes): this part measures it in the run, beside the hand-off it
 *   bounds. It runs as long as hot-key-0ms, and each worker records the time from the end of its
 *   turn to the start of its next: what a hot-key-0ms loop waits with no lock (its max-wait floor).
 * - Fourth part, hot-key-1ms's turns with no lock: see {@link FloorSpec.holdRingMs}. Its waits
 *   are the max-wait floor of that scenario.
 *
 * Timestamps are `process.hrtime.bigint()` (CLOCK_MONOTONIC on Linux: the same clock in every
 * process of the machine), as decimal strings; the hop runs from right before the PUBLISH call to
 * the start of the receiver's message callback.
 */
async function prepareFloor(setup: ProbeSetup, spec: FloorSpec): Promise<PreparedProbe> {
  const w = setup.worker;
  const channel = (worker: number) => `bench:floor:${setup.runId}:w${worker}`;
  const connections: Redis[] = [];
  const close = () => closeAll(connections);
  let cmd: Redis;
  let sub: Redis;
  try {
    cmd = await connectReady(setup.redis, `bench-${setup.runId}-floor-w${setup.worker}`);
    connections.push(cmd);
    sub = cmd.duplicate();
    connections.push(sub);
    sub.on('error', () => undefined);
    await sub.subscribe(channel(w));
    if (w === 0) for (let i = 0; i < spec.warmupPings; i++) await cmd.ping();
  } catch (error) {
    await close();
    throw error;
  }

  const pingMs: number[] = [];
  const hopMs: number[] = [];
  const turnHopMs: number[] = [];
  const roles: string[] = [];
  const hopper = w === 0 || w === 1;
  const peer = channel(w === 0 ? 1 : 0);

  return {
    async run(startNs) {
      const at = (ms: number) => startNs + BigInt(Math.round(ms * 1e6));
      const pingEnd = at(spec.pingMs);
      const hopStart = at(spec.pingMs + spec.gapMs);
      const hopRecordFrom = at(spec.pingMs + spec.gapMs + spec.hopWarmupMs);
      const hopEnd = at(spec.pingMs + spec.gapMs + spec.hopMs);
      const ringStart = at(spec.pingMs + spec.gapMs + spec.hopMs + spec.gapMs);
      const ringRecordFrom = at(spec.pingMs + spec.gapMs + spec.hopMs + spec.gapMs + spec.hopWarmupMs);
      const gapsRecordFrom = at(spec.pingMs + spec.gapMs + spec.hopMs + spec.gapMs + spec.turnRingCutMs);
      const ringEnd = at(spec.pingMs + spec.gapMs + spec.hopMs + spec.gapMs + spec.turnRingMs);
      const holdStart = ringEnd + BigInt(spec.gapMs * 1e6);
      const holdRecordFrom = holdStart + BigInt(spec.holdRingCutMs * 1e6);
      const holdEnd = at(floorMeasuredMs(spec));
      const waitUntil = async (t: bigint) => {
        const ms = Number(t - nowNs()) / 1e6;
        if (ms > 0) await sleep(ms);
        while (nowNs() < t) await sleep(0);
      };

      if (w === 0) {
        roles.push('ping');
        while (nowNs() < pingEnd) {
          const t0 = nowNs();
          await cmd.ping();
          pingMs.push(Number(nowNs() - t0) / 1e6);
        }
      }

      if (hopper) {
        roles.push('hop');
        const publish = () => {
          const stamp = String(nowNs());
          cmd.publish(peer, stamp).catch(() => undefined);
        };
        sub.on('message', (_channel: string, message: string) => {
          if (message.startsWith('turn ') || message === 'hold') return;
          const now = nowNs();
          const sent = BigInt(message);
          if (sent >= hopRecordFrom) hopMs.push(Number(now - sent) / 1e6);
          if (now < hopEnd) publish();
        });
        if (w === 0) {
          await waitUntil(hopStart);
          publish();
        }
      }
      if (roles.length === 0) roles.push('idle');

      // third part: the turn ring ('turn <stamp>' messages, so the hop part's listener ignores them)
      roles.push('turn');
      const next = channel((w + 1) % spec.processes);
      const passTurn = () => {
        cmd.publish(next, `turn ${nowNs()}`).catch(() => undefined);
      };
      const turnGapsMs: number[] = [];
      /** When this worker's last turn ended (ns; 0n: none yet). */
      let turnEndedAt = 0n;
      sub.on('message', (_channel: string, message: string) => {
        if (!message.startsWith('turn ')) return;
        const now = nowNs();
        const sent = BigInt(message.slice(5));
        if (sent >= ringRecordFrom) turnHopMs.push(Number(now - sent) / 1e6);
        if (now >= ringEnd) return;
        if (turnEndedAt >= gapsRecordFrom) turnGapsMs.push(Number(now - turnEndedAt) / 1e6);
        // the turn: the CPU kept busy, as a holder's 0 ms-hold cohort keeps it
        const turnEnd = nowNs() + BigInt(Math.round(spec.turnMs * 1e6));
        while (nowNs() < turnEnd) {
          // (spin)
        }
        turnEndedAt = nowNs();
        passTurn();
      });
      if (w === 0) {
        await waitUntil(ringStart);
        passTurn();
      }

      // fourth part: hot-key-1ms's turns with no lock ('hold' messages)
      roles.push('hold');
      const holdWaitsMs: number[] = [];
      let holds = 0;
      /** When each of this worker's loops last ended its hold (ns; 0n: not yet). */
      const released = Array.from({ length: spec.loops }, () => 0n);
      const holdTurn = async () => {
        for (let loop = 0; loop < spec.loops; loop++) {
          const begin = nowNs();
          const last = released[loop]!;
          if (last >= holdRecordFrom) holdWaitsMs.push(Number(begin - last) / 1e6);
          await sleep(spec.holdMs);
          released[loop] = nowNs();
          holds++;
        }
        if (nowNs() < holdEnd) cmd.publish(next, 'hold').catch(() => undefined);
      };
      sub.on('message', (_channel: string, message: string) => {
        if (message === 'hold') void holdTurn();
      });
      if (w === 0) {
        await waitUntil(holdStart);
        void holdTurn();
      }
      await waitUntil(holdEnd + BigInt(HOP_DRAIN_MS * 1e6));
      return { kind: 'floor', roles, pingMs, hopMs, turnHopMs, turnGapsMs, holdWaitsMs, holds };
    },
    close,
  };
}
