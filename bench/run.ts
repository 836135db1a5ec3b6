/**
 * `npm run bench`: rxjs-lock against redlock, redis-semaphore and a hand-written SET NX loop, in
 * one run, on one private redis-server. Writes bench/results/latest.json (one row per scenario ×
 * library × variant, plus one row each for the engine-cpu and floor probes) and meta.json, prints a PASS/MISS line per target, and (except in quick
 * mode) regenerates docs/benchmarks.md and docs/benchmarks.svg.
 *
 * Settings: see ./scenarios.ts (BENCH_QUICK=1 for a smoke run under a minute).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { EmbeddedRedis } from '../support/embeddedRedis.js';
import { EmbeddedRedisCluster } from '../support/embeddedRedisCluster.js';
import { entriesFor, entryLabel, type BenchEntry } from './libraries.js';
import {
  buildProbeRow,
  buildRow,
  clusterBusGrowth,
  emptyProbeRow,
  emptyRow,
  parseClusterBusPubsub,
  parseCommandStats,
  parseServerCpuSec,
  type ClusterBusPubsub,
} from './metrics.js';
import { cpuSnapshot, noiseBetween, type CpuSnapshot } from './noise.js';
import { pinProcess, pinRedis, type Pinning } from './pinning.js';
import { WorkerPool, type RunOrder } from './pool.js';
import { writeReport } from './report.js';
import { LATEST_PATH, META_PATH, RESULTS_DIR, type ResultRow, type RowEnv } from './results.js';
import { checkRoundTripCounting } from './roundTrips.js';
import {
  benchSteps,
  floorMeasuredMs,
  lockNames,
  probeDeadlineMs,
  readSettings,
  runDeadlineMs,
  type BenchStep,
  type ProbeSpec,
  type ScenarioSpec,
} from './scenarios.js';
import { evaluateTargets, formatTargetLine } from './targets.js';

const nowNs = (): bigint => process.hrtime.bigint();
/** Time between telling the workers to go and the run's time origin, so all start together. */
const GO_LEAD_NS = 20_000_000n;
/** Other processes using this share of the CPU during a run make it worth a warning. */
const NOISY_PCT = 10;

/** A dependency's version, read from its package.json on disk (not every package exports that file). */
function packageVersion(name: string): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version?: string };
    return manifest.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The commit the rxjs-lock source comes from, and whether src/ differs from it. */
function sourceVersion(): string {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return 'unknown (not a git checkout)';
  const dirty = git('status', '--porcelain', '--', 'src').stdout.trim() !== '';
  return `${head.stdout.trim()}${dirty ? ' + uncommitted changes in src/' : ''}`;
}

const noisy = (row: ResultRow): string[] =>
  row.otherCpuPct !== null && row.otherCpuPct >= NOISY_PCT ? [`NOISY: other processes used ${row.otherCpuPct}% of the CPU`] : [];

function describeProbeRow(row: ResultRow): string {
  if (row.status !== 'ok') return `${row.status.toUpperCase()}: ${row.note ?? ''}`;
  const us = (n: number | null) => (n === null ? '-' : `${n.toFixed(2)} µs`);
  const ms = (n: number | null) => (n === null ? '-' : `${n.toFixed(3)} ms`);
  const parts =
    row.scenario === 'engine-cpu'
      ? [
          `acquire+release CPU ${us(row.cpuUsPerPair)} / wall ${us(row.wallUsPerPair)} per pair`,
          `withLock(of(1)) CPU ${us(row.withLockCpuUsPerPair)} / wall ${us(row.withLockWallUsPerPair)}`,
          `in-process mutex CPU ${us(row.mutexCpuUsPerPair)} / wall ${us(row.mutexWallUsPerPair)}`,
          `${(row.enginePairs ?? 0).toLocaleString('en-US')} pairs measured`,
        ]
      : [
          `PING p50/p99 ${ms(row.pingP50Ms)}/${ms(row.pingP99Ms)} (${row.pings} pings)`,
          `pub/sub hop p50/p99 ${ms(row.hopP50Ms)}/${ms(row.hopP99Ms)} (${row.hops} hops)`,
          `hop after a ${row.turnMs ?? '?'} ms turn p50/p99 ${ms(row.turnHopP50Ms ?? null)}/${ms(row.turnHopP99Ms ?? null)} (${row.turnHops ?? 0} hops)`,
          `turn ring gap p50/p99/max ${ms(row.turnGapP50Ms ?? null)}/${ms(row.turnGapP99Ms ?? null)}/${ms(row.turnGapMaxMs ?? null)}`,
          `hold ring wait p50/p99/max ${ms(row.holdRingWaitP50Ms ?? null)}/${ms(row.holdRingWaitP99Ms ?? null)}/${ms(row.holdRingWaitMaxMs ?? null)} (${row.holdRingHoldsPerSec ?? '?'} holds/s)`,
        ];
  parts.push(...noisy(row));
  if (row.note) parts.push(`NOTE ${row.note}`);
  return parts.join(' · ');
}

function describeRow(row: ResultRow): string {
  if (row.scenario === 'engine-cpu' || row.scenario === 'floor') return describeProbeRow(row);
  if (row.status !== 'ok') return `${row.status.toUpperCase()}: ${row.note ?? ''}`;
  const parts = [
    `${Math.round(row.acquisitionsPerSec ?? 0).toLocaleString('en-US')} acq/s`,
    `rt/acq ${row.roundTripsPerAcquisition ?? '-'}`,
    `srv/acq ${row.serverCommandsPerAcquisition ?? '-'}`,
    `srv CPU/acq ${row.serverCpuUsPerAcquisition ?? '-'} µs`,
    `wait p50/p99/max ${row.waitP50Ms ?? '-'}/${row.waitP99Ms ?? '-'}/${row.waitMaxMs ?? '-'} ms`,
    ...(row.warmupCutSec !== null ? [`max wait after ${row.warmupCutSec} s ${row.waitMaxAfterWarmupMs ?? '-'} ms`] : []),
    `jain ${row.jain ?? '-'}`,
    `timeouts ${row.timeouts}`,
    ...(row.overlaps !== null ? [`overlaps ${row.overlaps}`] : []),
  ];
  if (row.maxHolders !== null) parts.push(`max holders at once ${row.maxHolders}${row.permitLimit !== null ? ` (limit ${row.permitLimit})` : ''}`);
  if (row.writerOverlaps !== null) {
    parts.push(
      `reads/writes ${row.reads}/${row.writes}`,
      `max readers ${row.maxReaders}`,
      `max writers ${row.maxWriters}`,
      `writer overlaps ${row.writerOverlaps}`,
    );
    parts.push(
      `read wait p50/p99 ${row.readWaitP50Ms ?? '-'}/${row.readWaitP99Ms ?? '-'} ms`,
      `write wait p50/p99 ${row.writeWaitP50Ms ?? '-'}/${row.writeWaitP99Ms ?? '-'} ms`,
    );
  }
  if (row.handoffP50Ms !== null) parts.push(`handoff p50 ${row.handoffP50Ms} ms`);
  if (row.sameLoopReacquirePct !== null) parts.push(`same-loop ${row.sameLoopReacquirePct}%`);
  if (row.pairP50Ms !== null) parts.push(`pair p50 ${(row.pairP50Ms * 1000).toFixed(1)} µs`);
  if (row.busPubsubMessagesPerAcquisition !== null)
    parts.push(`bus pub/sub msgs/acq ${row.busPubsubMessagesPerAcquisition} (publish ${row.busPublishMessages}, publishshard ${row.busPublishShardMessages})`);
  if (row.scenario === 'seed-000') parts.push(`SET ${row.setCommands}`, `ok ${row.successes}`, `failed ${row.failures}`);
  if (row.orphanedKeys !== null) parts.push(`orphaned ${row.orphanedKeys}`, `held ${row.successes}/${row.stormAttempts}`);
  parts.push(...noisy(row));
  if (row.note) parts.push(`NOTE ${row.note}`);
  return parts.join(' · ');
}

interface Bench {
  server: EmbeddedRedis | undefined;
  admin: Redis | undefined;
  /** The servers beside `server` for the quorum scenarios (started only when one of them runs). */
  extraServers: EmbeddedRedis[];
  extraAdmins: Redis[];
  /** The Redis Cluster of the cluster scenarios (started before the first of them, stopped after the last). */
  cluster: EmbeddedRedisCluster | undefined;
  /** One admin connection per master of `cluster`, in its order. */
  clusterAdmins: Redis[];
  pool: WorkerPool | undefined;
  pinning: Pinning | undefined;
}

/** Where a run's lock lives: `nodes` independent servers (the bench's own first), or the masters of the bench's cluster. */
interface Topology {
  readonly nodes?: number;
  readonly clusterMasters?: number;
}

/** The Redis servers of a run and their admin connections: the bench's own first, `nodes` in all; or the cluster's masters. */
function serversOf(bench: Bench, topology: Topology): Array<{ server: EmbeddedRedis; admin: Redis }> {
  const { server, admin } = bench;
  if (!server || !admin) throw new Error('bench not started');
  if ((topology.clusterMasters ?? 0) > 0) {
    const cluster = bench.cluster;
    if (!cluster) throw new Error('the Redis Cluster of the cluster scenarios is not started');
    return cluster.nodes.map((node, i) => ({ server: node, admin: bench.clusterAdmins[i]! }));
  }
  const nodes = topology.nodes ?? 1;
  if (nodes - 1 > bench.extraServers.length) throw new Error(`${nodes} Redis servers wanted, ${bench.extraServers.length + 1} started`);
  return [{ server, admin }, ...bench.extraServers.slice(0, nodes - 1).map((extra, i) => ({ server: extra, admin: bench.extraAdmins[i]! }))];
}

/** Moves the run's Redis servers to the CPU the scenario wants; returns how the run is pinned, for its row. */
function place(bench: Bench, spec: Topology & { readonly placement: 'split' | 'shared-core' }): string | null {
  const { server, pinning } = bench;
  if (!server || !pinning) return null;
  const redisCpu = spec.placement === 'shared-core' ? pinning.clientCpu : pinning.redisCpu;
  const pinned = serversOf(bench, spec).every(({ server: s }) => pinProcess(s.pid, redisCpu));
  return pinned ? `redis@${redisCpu} clients@${pinning.clientCpu}` : null;
}

const needsCluster = (step: BenchStep): boolean => step.kind === 'lock' && step.spec.clusterMasters > 0;

/** Starts the bench's Redis Cluster (masters pinned like the other servers) unless it runs already. */
async function ensureCluster(bench: Bench, masters: number): Promise<EmbeddedRedisCluster> {
  if (bench.cluster) {
    if (bench.cluster.nodes.length !== masters) throw new Error(`a cluster of ${masters} masters wanted, one of ${bench.cluster.nodes.length} runs`);
    return bench.cluster;
  }
  const cluster = await EmbeddedRedisCluster.start(masters);
  bench.cluster = cluster;
  bench.clusterAdmins = cluster.nodeClients();
  for (const admin of bench.clusterAdmins) admin.on('error', () => undefined);
  if (bench.pinning) for (const node of cluster.nodes) pinProcess(node.pid, bench.pinning.redisCpu);
  console.log(`  Redis Cluster of ${masters} masters on ${cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(', ')} (private)`);
  return cluster;
}

async function stopCluster(bench: Bench): Promise<void> {
  for (const admin of bench.clusterAdmins) admin.disconnect();
  bench.clusterAdmins = [];
  const cluster = bench.cluster;
  bench.cluster = undefined;
  await cluster?.stop().catch(() => undefined);
}

/** Each node's cluster-bus pub/sub counters (CLUSTER INFO), in the order of `admins`. */
async function clusterBusCounters(admins: readonly Redis[]): Promise<ClusterBusPubsub[]> {
  return Promise.all(
    admins.map(async (admin) => {
      const counters = parseClusterBusPubsub((await admin.call('CLUSTER', 'INFO')) as string);
      if (counters === null) throw new Error('CLUSTER INFO gave no cluster state');
      return counters;
    }),
  );
}

const sum = (values: ReadonlyArray<number | null>): number | null => (values.some((v) => v === null) ? null : values.reduce<number>((a, b) => a + b!, 0));

/** Per-command call counts summed over servers. */
function sumCommandStats(stats: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const total: Record<string, number> = {};
  for (const one of stats) for (const [name, calls] of Object.entries(one)) total[name] = (total[name] ?? 0) + calls;
  return total;
}

async function runOne(bench: Bench, spec: ScenarioSpec, entry: BenchEntry, runId: string, baseEnv: RowEnv): Promise<ResultRow> {
  const { server, admin, pool } = bench;
  if (!server || !admin || !pool) throw new Error('bench not started');
  const env: RowEnv = { ...baseEnv, pinned: place(bench, spec) };
  const servers = serversOf(bench, spec);
  const admins = servers.map((s) => s.admin);
  const onCluster = spec.clusterMasters > 0;
  const addresses = servers.map(({ server: s }) => ({ host: s.host, port: s.port }));
  // On the cluster, every library gets one Cluster client (nodeCount 1) on the masters.
  const nodes = onCluster ? [{ host: server.host, port: server.port }] : addresses;
  const orders: RunOrder[] = Array.from({ length: spec.processes }, (_, worker) => ({
    type: 'run',
    setup: { runId, worker, entry, scenario: spec, redis: { host: server.host, port: server.port }, nodes, cluster: onCluster ? addresses : null },
  }));
  // Commands and server CPU of every server of the run, summed.
  const commandStats = async () => sumCommandStats(await Promise.all(admins.map(async (a) => parseCommandStats(await a.info('commandstats')))));
  const serverCpuSec = async () => sum(await Promise.all(admins.map(async (a) => parseServerCpuSec(await a.info('cpu')))));
  let commandsBefore: Record<string, number> = {};
  let serverCpuBefore: number | null = null;
  let busBefore: ClusterBusPubsub[] = [];
  const ourPids = () => [process.pid, ...servers.map((s) => s.server.pid), ...pool.pids()];
  let cpuBefore: CpuSnapshot | undefined;
  const result = await pool.run(
    orders,
    async () => {
      // Every worker is connected and warmed up: start from an empty database and zeroed counters.
      await Promise.all(admins.map((a) => a.flushall()));
      await Promise.all(admins.map((a) => a.config('RESETSTAT')));
      // (CLUSTER INFO is a command: read before the command counts, it stays out of the run's)
      if (onCluster) busBefore = await clusterBusCounters(admins);
      commandsBefore = await commandStats();
      serverCpuBefore = await serverCpuSec();
      cpuBefore = cpuSnapshot(ourPids());
      const startNs = nowNs() + GO_LEAD_NS;
      const seconds = spec.stop.kind === 'time' && !spec.storm ? spec.stop.seconds : 0;
      return { startNs, stopAtNs: startNs + BigInt(Math.round(seconds * 1e9)) };
    },
    runDeadlineMs(spec),
  );
  if (result.kind === 'skipped') return emptyRow(spec, entry, 'skipped', result.reason, env);
  if (result.kind === 'failed') return emptyRow(spec, entry, 'failed', result.message, env);
  const noise = noiseBetween(cpuBefore, cpuSnapshot(ourPids()));

  const serverCpuAfter = await serverCpuSec();
  const commandsAfter = await commandStats();
  const clusterBus = onCluster ? clusterBusGrowth(busBefore, await clusterBusCounters(admins)) : null;
  let orphanedKeys: number | null = null;
  if (spec.storm) {
    const keys = result.reports[0]?.storeKeys ?? lockNames(spec);
    orphanedKeys = keys.length === 0 ? 0 : await admin.exists(...keys);
  }
  return buildRow({
    spec,
    entry,
    reports: result.reports,
    windowNs: Number(result.stopAtNs - result.startNs),
    commandsBefore,
    commandsAfter,
    orphanedKeys,
    serverCpuUs: serverCpuBefore === null || serverCpuAfter === null ? null : (serverCpuAfter - serverCpuBefore) * 1e6,
    clusterBus,
    noise,
    env,
  });
}

/**
 * A probe (engine-cpu, floor) on the same pinned worker processes as the lock runs: engine-cpu
 * on worker 0 alone, floor on as many workers as the hot-key scenarios, Redis on its own CPU.
 */
async function runProbe(bench: Bench, spec: ProbeSpec, runId: string, baseEnv: RowEnv): Promise<ResultRow> {
  const { server, admin, pool } = bench;
  if (!server || !admin || !pool) throw new Error('bench not started');
  const env: RowEnv = { ...baseEnv, pinned: place(bench, spec) };
  const orders: RunOrder[] = Array.from({ length: spec.processes }, (_, worker) => ({
    type: 'probe',
    setup: { runId, worker, probe: spec, redis: { host: server.host, port: server.port } },
  }));
  const ourPids = () => [process.pid, server.pid, ...pool.pids()];
  let cpuBefore: CpuSnapshot | undefined;
  const measuredMs = spec.name === 'floor' ? floorMeasuredMs(spec) : 0;
  const result = await pool.run(
    orders,
    async () => {
      await admin.flushall();
      cpuBefore = cpuSnapshot(ourPids());
      const startNs = nowNs() + GO_LEAD_NS;
      return { startNs, stopAtNs: startNs + BigInt(Math.round(measuredMs * 1e6)) };
    },
    probeDeadlineMs(spec),
  );
  if (result.kind === 'skipped') return emptyProbeRow(spec, 'skipped', result.reason, env);
  if (result.kind === 'failed') return emptyProbeRow(spec, 'failed', result.message, env);
  return buildProbeRow(spec, result.probes, noiseBetween(cpuBefore, cpuSnapshot(ourPids())), env);
}

/** Builds the package into dist/, which the rxjs-lock adapter loads (see adapters/rxjsLock.ts). */
function buildPackage(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`building the package failed:\n${built.stdout}${built.stderr}`);
}

async function main(): Promise<number> {
  buildPackage();
  const settings = readSettings();
  const steps = benchSteps(settings);
  const bench: Bench = {
    server: undefined,
    admin: undefined,
    extraServers: [],
    extraAdmins: [],
    cluster: undefined,
    clusterAdmins: [],
    pool: undefined,
    pinning: undefined,
  };

  let cleaningUp: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaningUp ??= (async () => {
      bench.pool?.killAll();
      bench.admin?.disconnect();
      for (const extra of bench.extraAdmins) extra.disconnect();
      await Promise.all([...[bench.server, ...bench.extraServers].map((s) => s?.stop().catch(() => undefined)), stopCluster(bench)]);
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping the workers and Redis`);
      void cleanUp().finally(() => process.exit(130));
    });
  }

  try {
    const started = Date.now();
    bench.server = await EmbeddedRedis.start();
    const server = bench.server;
    bench.admin = new Redis({ host: server.host, port: server.port });
    const admin = bench.admin;
    const pinning: Pinning | undefined = pinRedis(server.pid);
    bench.pinning = pinning;
    // The quorum scenarios' other servers, started beside the first, alike.
    const nodesWanted = Math.max(1, ...steps.map((s) => (s.kind === 'lock' && s.spec.clusterMasters === 0 ? s.spec.nodes : 1)));
    for (let i = 1; i < nodesWanted; i++) {
      const extra = await EmbeddedRedis.start();
      bench.extraServers.push(extra);
      bench.extraAdmins.push(new Redis({ host: extra.host, port: extra.port }));
      if (pinning) pinProcess(extra.pid, pinning.redisCpu);
    }
    const redisVersion = /redis_version:([^\r\n]+)/.exec(await admin.info('server'))?.[1] ?? 'unknown';
    const checked = await checkRoundTripCounting(server.host, server.port);

    const cpuModel = cpus()[0]?.model ?? 'unknown';
    const env: RowEnv = {
      runAt: new Date().toISOString(),
      redisVersion,
      node: process.version,
      cpu: cpuModel,
      cores: cpus().length,
      pinned: pinning ? `redis@${pinning.redisCpu} clients@${pinning.clientCpu}` : null,
      quick: settings.quick,
      rxjsLockSource: sourceVersion(),
    };
    console.log(
      [
        `rxjs-lock bench${settings.quick ? ' (QUICK smoke run: numbers not comparable)' : ''}`,
        `  redis-server ${redisVersion} on ${server.host}:${server.port} (private)${bench.extraServers.length > 0 ? `; for the quorum scenarios also on ${bench.extraServers.map((e) => `${e.host}:${e.port}`).join(', ')}` : ''}${steps.some(needsCluster) ? '; a Redis Cluster is started for the cluster scenario' : ''}`,
        `  ${pinning ? `pinned: client processes on CPU ${pinning.clientCpu}; Redis on CPU ${pinning.redisCpu} (on CPU ${pinning.clientCpu} too for uncontended)` : 'not pinned (taskset missing or fewer than 2 CPUs)'}`,
        `  ${cpus().length} × ${cpuModel}, node ${process.version}`,
        `  rxjs-lock source: ${env.rxjsLockSource}`,
        `  round-trip counter self-check: ok (${checked} of ${checked})`,
        '',
      ].join('\n'),
    );

    const poolSize = Math.max(...steps.map((s) => s.spec.processes), 1);
    bench.pool = new WorkerPool(poolSize, pinning?.clientCpu);
    await bench.pool.start();

    const rows: ResultRow[] = [];
    let runNumber = 0;
    const lastClusterStep = steps.reduce((last, step, i) => (needsCluster(step) ? i : last), -1);
    for (const [index, step] of steps.entries()) {
      console.log(`${step.spec.name}: ${step.spec.summary}`);
      if (step.kind === 'probe') {
        runNumber++;
        const row = await runProbe(bench, step.spec, `${runNumber}`, env);
        rows.push(row);
        console.log(`  ${row.label.padEnd(28)} ${describeRow(row)}`);
        continue;
      }
      // The cluster runs only for its scenarios: its nodes' gossip stays out of the other runs.
      let noCluster: string | undefined;
      if (step.spec.clusterMasters > 0) {
        noCluster = await ensureCluster(bench, step.spec.clusterMasters).then(
          () => undefined,
          (error: unknown) => `the Redis Cluster did not start: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      for (const entry of entriesFor(step.spec.name, settings.libraries)) {
        runNumber++;
        const row = noCluster === undefined ? await runOne(bench, step.spec, entry, `${runNumber}`, env) : emptyRow(step.spec, entry, 'failed', noCluster, env);
        rows.push(row);
        console.log(`  ${entryLabel(entry).padEnd(28)} ${describeRow(row)}`);
      }
      if (index === lastClusterStep) await stopCluster(bench);
    }

    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(LATEST_PATH, `${JSON.stringify(rows, null, 2)}\n`);
    const meta = {
      ...env,
      totalMemoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
      os: `${type()} ${release()}`,
      settings,
      scenarios: steps.map((s) => s.spec),
      versions: {
        ioredis: packageVersion('ioredis'),
        redlock: packageVersion('redlock'),
        'redis-semaphore': packageVersion('redis-semaphore'),
        rxjs: packageVersion('rxjs'),
      },
      durationSec: Math.round((Date.now() - started) / 1000),
    };
    writeFileSync(META_PATH, `${JSON.stringify(meta, null, 2)}\n`);

    console.log('\nTargets (rxjs-lock with default settings, same run):');
    for (const t of evaluateTargets(rows)) console.log(`  ${formatTargetLine(t)}`);
    console.log(`\nwrote ${LATEST_PATH}`);
    if (settings.quick) console.log('quick run: docs/benchmarks.md and docs/benchmarks.svg left as they were (regenerate with `npx tsx bench/report.ts`)');
    else for (const path of writeReport(rows)) console.log(`wrote ${path}`);
    console.log(`bench took ${meta.durationSec} s`);
    return 0;
  } finally {
    await bench.pool?.shutdown().catch(() => bench.pool?.killAll());
    await cleanUp();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error('\nbench failed:', error);
    process.exitCode = 1;
  },
);
