/**
 * Looking at a Redis Cluster's nodes from a test: which node serves a key, keys that land on a
 * given node, and the per-node counters that show where a command ran and where pub/sub traffic
 * went (INFO commandstats, CLUSTER INFO's bus message counts).
 */
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { keySlot } from './keySlot.js';

/**
 * A client of `cluster` that keeps the slot table it read at start (no periodic refresh), so a
 * slot migrated later is met as MOVED; resolves once it is ready.
 */
export async function connectWithStaleSlots(cluster: EmbeddedRedisCluster): Promise<Cluster> {
  const client = new Cluster(cluster.startupNodes, { slotsRefreshInterval: 600_000, redisOptions: { maxRetriesPerRequest: 2 } });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

/** A test file's Redis Cluster (see {@link clusterForSuite}); set once its tests start. */
export interface ClusterSuite {
  cluster: EmbeddedRedisCluster;
  /** The file's Cluster client. */
  client: Cluster;
  /** One plain client per node, in the order of `cluster.nodes`. */
  nodes: Redis[];
}

/** A Cluster client of `cluster` that follows slot moves; resolves once it is ready. */
export async function connectReady(cluster: EmbeddedRedisCluster): Promise<Cluster> {
  const client = cluster.connect();
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

/**
 * A private 3-master Redis Cluster for the test file that calls this (at its top level): started
 * before its tests, with a client made by `connect` and a plain client per node, and stopped after
 * them (every node resumed first, in case a test left one paused).
 */
export function clusterForSuite(connect: (cluster: EmbeddedRedisCluster) => Promise<Cluster> = connectReady): ClusterSuite {
  const suite = {} as ClusterSuite;
  beforeAll(async () => {
    suite.cluster = await EmbeddedRedisCluster.start(3);
    suite.client = await connect(suite.cluster);
    suite.nodes = suite.cluster.nodeClients();
  }, 60_000);
  afterAll(async () => {
    for (const node of suite.cluster?.nodes ?? []) node.resume();
    suite.client?.disconnect();
    suite.nodes?.forEach((node) => node.disconnect());
    await suite.cluster?.stop();
  });
  return suite;
}

/** `host:port` of the master serving `key`'s slot, as the client's slot table says. */
export function masterOf(client: Cluster, key: string): string {
  const nodes = client.slots[keySlot(key)];
  if (nodes === undefined || nodes[0] === undefined) throw new Error(`no node known for slot of ${key}`);
  return nodes[0];
}

/** `host:port` of a plain client. */
export const addressOf = (node: Redis): string => `${node.options.host}:${node.options.port}`;

/** The key the store sees for a locker's key (the locker's default `keyPrefix`). */
export const storeKeyOf = (key: string): string => `lock:${key}`;

/** A locker key named `${stem}<n>` for each node of `nodes`, whose slot (of its store key) that node serves. */
export function keysOnEachNode(client: Cluster, nodes: readonly Redis[], stem: string): string[] {
  return nodes.map((node) => {
    for (let n = 0; n < 100_000; n++) {
      const key = `${stem}${n}`;
      if (masterOf(client, storeKeyOf(key)) === addressOf(node)) return key;
    }
    throw new Error(`no key for ${addressOf(node)}`);
  });
}

/** Per-node counters of one moment. */
export interface NodeCounters {
  /** Calls of each command (scripts' inner calls included), from INFO commandstats. */
  readonly calls: Readonly<Record<string, number>>;
  /** Cluster bus messages by type, sent and received (CLUSTER INFO cluster_stats_messages_*). */
  readonly bus: Readonly<Record<string, number>>;
}

export async function countersOf(node: Redis): Promise<NodeCounters> {
  const [commandstats, clusterInfo] = await Promise.all([node.info('commandstats'), node.call('CLUSTER', 'INFO') as Promise<string>]);
  const calls: Record<string, number> = {};
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  const bus: Record<string, number> = {};
  for (const match of clusterInfo.matchAll(/^cluster_stats_messages_([a-z]+_(?:sent|received)):(\d+)/gm)) bus[match[1]!] = Number(match[2]);
  return { calls, bus };
}

/** How much each counter grew from `before` to `after` (absent counters are 0). */
export function growth(before: NodeCounters, after: NodeCounters): { calls: (name: string) => number; bus: (name: string) => number } {
  return {
    calls: (name) => (after.calls[name] ?? 0) - (before.calls[name] ?? 0),
    bus: (name) => (after.bus[name] ?? 0) - (before.bus[name] ?? 0),
  };
}

/**
 * Moves hash slot `slot` from `source` to `target` as redis-cli's resharding does: the target
 * IMPORTING, the source MIGRATING, its keys MIGRATEd a few at a time (with `pauseMs` before each
 * step, so traffic meets the slot half-moved), then every node told the new owner. Clients that
 * keep using the old owner meanwhile get ASK (a key already moved), TRYAGAIN (a script whose keys
 * are split between the two nodes) and, at the end, MOVED.
 */
export async function migrateSlot(slot: number, source: Redis, target: Redis, all: readonly Redis[], pauseMs = 0): Promise<void> {
  const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs));
  const [sourceId, targetId] = (await Promise.all([source.call('CLUSTER', 'MYID'), target.call('CLUSTER', 'MYID')])) as [string, string];
  await target.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
  await source.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
  await pause();
  for (;;) {
    const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '2')) as string[];
    if (keys.length === 0) break;
    await source.call('MIGRATE', String(target.options.host), String(target.options.port), '', '0', '5000', 'KEYS', ...keys);
    await pause();
  }
  await target.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  await source.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
  await Promise.all(all.filter((node) => node !== source && node !== target).map((node) => node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId)));
  await untilEveryNodeNames(slot, target, targetId, all);
}

/** Polls (50 ms apart) in a row in which every node must name the new master before a migration counts as done. */
const AGREED_POLLS = 4;

/** The `host:port` `node` names as the master of `slot` (CLUSTER SLOTS), or undefined. */
async function ownerAsSeenBy(node: Redis, slot: number): Promise<string | undefined> {
  const ranges = (await node.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const range = ranges.find(([start, end]) => start <= slot && slot <= end);
  return range === undefined ? undefined : `${range[2][0]}:${range[2][1]}`;
}

/**
 * Waits until every node names `target` as the master of `slot`. The nodes' views can part: seen
 * here (rarely, on a loaded machine) as a MOVED ping-pong between the old and the new owner that
 * outlived 30 s of contention, every acquisition failing with "Too many Cluster redirections". A
 * node that still names another master after a moment is told again, after the target bumped its
 * config epoch so its claim wins over any older one still on the cluster bus.
 */
async function untilEveryNodeNames(slot: number, target: Redis, targetId: string, all: readonly Redis[], timeoutMs = 10_000): Promise<void> {
  const wanted = `${target.options.host}:${target.options.port}`;
  const started = performance.now();
  // Agreement must hold for a few polls in a row. Seen once in CI: the source named itself the
  // slot's master after the migration, was told again, every node then agreed, and a batch sent to
  // the source right after still found the moved keys 'gone' (the source answered for the slot).
  let agreedFor = 0;
  for (let round = 0; ; round++) {
    const views = await Promise.all(all.map((node) => ownerAsSeenBy(node, slot)));
    const parted = all.filter((_, i) => views[i] !== wanted);
    agreedFor = parted.length === 0 ? agreedFor + 1 : 0;
    if (agreedFor >= AGREED_POLLS) return;
    if (performance.now() - started > timeoutMs) throw new Error(`slot ${slot}: nodes still name ${views.join(', ')} as its master, not ${wanted}`);
    if (parted.length > 0 && round > 0 && round % 10 === 0) {
      console.info(`slot ${slot}: ${parted.length} node(s) still name another master than ${wanted} (${views.join(', ')}): telling them again`);
      await target.call('CLUSTER', 'BUMPEPOCH');
      await Promise.all(parted.map((node) => node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId)));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
