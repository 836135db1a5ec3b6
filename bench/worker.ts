/**
 * A bench worker process: serves runs one after another for the parent (./run.ts). For each run
 * it builds the library on new connections, warms it up, waits for `go`, runs the scenario's
 * workload, closes the connections and reports.
 *
 * Forked by ./pool.ts; not meant to be run on its own.
 */
import { createAdapter, preloadAdapters } from './adapters/index.js';
import { closeAll, connectClusterReady, connectReady } from './connections.js';
import type { AdapterContext, LockAdapter, RedisConnection } from './adapters/types.js';
import type { ParentMessage, ProbeSetup, RunSetup, StormTally, WorkerMessage } from './protocol.js';
import { installRoundTripCounter } from './roundTrips.js';
import { type GcPauses, watchGcPauses } from './gcPauses.js';
import { nowNs, Recorder, runLoops, runStorm, takerFor, warmUp, warmupRoles, type Take } from './workloads.js';
import { primitiveOf } from './libraries.js';
import { lockNames } from './scenarios.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

const counter = installRoundTripCounter();

/**
 * Rejections nobody handled (a library's timer failing, say) are counted as errors of the run in
 * progress instead of killing the process.
 */
const strayErrors: string[] = [];
process.on('unhandledRejection', (reason: unknown) => {
  strayErrors.push(`unhandled rejection: ${describe(reason)}`);
});

/** Messages from the parent, taken one at a time. */
class Inbox {
  private readonly queue: ParentMessage[] = [];
  private waiting: ((message: ParentMessage) => void) | undefined;

  push(message: ParentMessage): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting(message);
    else this.queue.push(message);
  }

  next(): Promise<ParentMessage> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }
}

/** Sends to the parent; a parent that is gone leaves nobody to work for, so the worker exits. */
function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) process.exit(1);
    process.send!(message, (error: Error | null) => (error ? process.exit(1) : resolve()));
  });
}

async function serveRun(setup: RunSetup, inbox: Inbox): Promise<void> {
  const spec = setup.scenario;
  const tag = `bench-${setup.runId}-w${setup.worker}`;
  const connections: RedisConnection[] = [];
  const track = <C extends RedisConnection>(connection: C): C => {
    connections.push(connection);
    return connection;
  };
  const connect = async (address: RunSetup['redis']) => track(await connectReady(address, tag));
  const cluster = setup.cluster;
  const ctx: AdapterContext = {
    nodeCount: setup.nodes.length,
    // In a cluster scenario, every library gets a Cluster client where it would get a connection.
    connect: async () => (cluster === null ? connect(setup.redis) : track(await connectClusterReady(cluster, tag))),
    // The first node is setup.redis: connect it first, so connections[0] is a connection to it.
    connectNodes: async () => {
      const first = await connect(setup.redis);
      return [first, ...(await Promise.all(setup.nodes.slice(1).map(connect)))];
    },
  };

  let adapter: LockAdapter;
  try {
    adapter = await createAdapter(setup.entry, ctx);
  } catch (error) {
    await closeAll(connections);
    // A variant naming an option this version of rxjs-lock does not have: skip it, not fail.
    if (error instanceof Error && error.name === 'LockOptionsError') await send({ type: 'skipped', reason: error.message });
    else await send({ type: 'failed', message: `could not build ${setup.entry.library}: ${describe(error)}` });
    return;
  }

  // What this run's acquisitions take: the adapter's mutex, or its semaphore or read-write lock.
  const primitive = primitiveOf(spec, setup.entry);
  const storeKey = (name: string) => (primitive.kind === 'mutex' ? adapter.storeKey(name) : adapter.shared!.storeKey(name));
  let take: Take;
  try {
    take = takerFor(adapter, primitive, setup.entry.library);
    // The orphan count of cancel-storm looks for storeKey(name) in Redis: check the name is right.
    const warmupName = `bench:warmup:${process.pid}`;
    await warmUp(take, warmupRoles(primitive), spec, warmupName, async () => {
      const key = storeKey(warmupName);
      if ((await connections[0]!.exists(key)) !== 1)
        throw new Error(`${setup.entry.library} holds a lock but "${key}" is not in Redis: storeKey() is out of date`);
    });
  } catch (error) {
    await adapter.close().catch(() => undefined);
    await closeAll(connections);
    await send({ type: 'failed', message: `warm-up failed: ${describe(error)}` });
    return;
  }

  collectGarbage();
  await send({ type: 'ready' });
  const order = await inbox.next();
  if (order.type !== 'go') {
    await adapter.close().catch(() => undefined);
    await closeAll(connections);
    await send({ type: 'cancelled' });
    if (order.type === 'exit') process.exit(0);
    return;
  }

  const startNs = BigInt(order.startNs);
  const stopAtNs = BigInt(order.stopAtNs);
  // The parent sets the origin a little ahead, so every worker starts at the same moment.
  // (A timer, not a spin: eight workers share one CPU. Timers are late, never early.)
  const lead = Number(startNs - nowNs()) / 1e6;
  if (lead > 0) await sleep(lead);
  while (nowNs() < startNs) await sleep(0);
  const rec = new Recorder(startNs, spec.recordPairs);
  const gc = spec.waitWarmupCutSec === null ? undefined : watchGcPauses(spec.waitWarmupCutSec * 1000);
  strayErrors.length = 0;
  counter.start(tag);
  let storm: StormTally | undefined;
  let failure: unknown;
  let finishedNs = 0;
  let gcSeen: GcPauses | undefined;
  try {
    if (spec.storm) storm = await runStorm(adapter, spec, rec);
    else await runLoops(take, spec, setup.worker, rec, stopAtNs);
    finishedNs = Number(nowNs() - startNs);
    gcSeen = gc?.stop();
    await adapter.settle();
    if (spec.storm) await sleep(spec.storm.settleMs);
  } catch (error) {
    failure = error;
  }
  if (gcSeen === undefined) gc?.stop(); // (a failed run: the watch ends all the same)
  const roundTrips = counter.stop();
  await adapter.close().catch(() => undefined);
  await closeAll(connections);
  if (failure !== undefined) {
    await send({ type: 'failed', message: describe(failure) });
    return;
  }
  await send({
    type: 'done',
    ...rec.columnsForReport(),
    gcPauseMaxMs: gcSeen ? gcSeen.maxMs : null,
    gcMajorPauses: gcSeen ? gcSeen.majors : null,
    finishedNs,
    loops: spec.storm ? spec.storm.concurrency : spec.loopsPerProcess,
    timeouts: rec.timeouts,
    errors: rec.errors + strayErrors.length,
    errorSamples: [...rec.errorSamples, ...strayErrors.slice(0, 5)],
    roundTrips,
    ...(storm ? { storm } : {}),
    storeKeys: lockNames(spec).map(storeKey),
  });
}

/**
 * A full garbage collection (the pool starts workers with --expose-gc), right before `ready`: a
 * worker runs one library after another, and the garbage of the run before — another library's,
 * or the warm-up's — is collected now, not during the measured run. Without it the first run of
 * every scenario (rxjs-lock's, always first) paid for the previous scenario's last run: in
 * uncontended-3-nodes its pair p50 was 12–13% above store-only's (the same RedlockStore, no engine)
 * in three runs with it first, and −3 to +7% in three runs with it last (+4% and +9% first, with this).
 */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A probe (engine-cpu, floor): prepare, `ready`, wait for `go`, measure, report `probed`. */
async function serveProbe(setup: ProbeSetup, inbox: Inbox): Promise<void> {
  let probe: import('./probes.js').PreparedProbe;
  try {
    const { prepareProbe } = await import('./probes.js');
    probe = await prepareProbe(setup);
  } catch (error) {
    await send({ type: 'failed', message: `${setup.probe.name}: could not prepare: ${describe(error)}` });
    return;
  }
  collectGarbage();
  await send({ type: 'ready' });
  const order = await inbox.next();
  if (order.type !== 'go') {
    await probe.close();
    await send({ type: 'cancelled' });
    if (order.type === 'exit') process.exit(0);
    return;
  }
  const startNs = BigInt(order.startNs);
  const lead = Number(startNs - nowNs()) / 1e6;
  if (lead > 0) await sleep(lead);
  while (nowNs() < startNs) await sleep(0);
  try {
    const report = await probe.run(startNs);
    await probe.close();
    await send({ type: 'probed', report });
  } catch (error) {
    await probe.close().catch(() => undefined);
    await send({ type: 'failed', message: `${setup.probe.name}: ${describe(error)}` });
  }
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/worker.ts is started by bench/run.ts (npm run bench), not directly');
  // A worker whose parent is gone has nobody to report to.
  process.once('disconnect', () => process.exit(1));
  const inbox = new Inbox();
  process.on('message', (message: ParentMessage) => inbox.push(message));
  // The probes load rxjs-lock's build too: load them now, with the adapters (a failure shows in their runs).
  await Promise.allSettled([preloadAdapters(), import('./probes.js')]);
  await send({ type: 'started', pid: process.pid });
  for (;;) {
    const message = await inbox.next();
    if (message.type === 'exit') break;
    if (message.type === 'run') await serveRun(message.setup, inbox);
    if (message.type === 'probe') await serveProbe(message.setup, inbox);
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(`bench worker ${process.pid} failed:`, error);
  process.exit(1);
});
