/**
 * A private Redis Cluster of N masters on this machine, formed with CLUSTER commands (no
 * redis-cli needed): each master owns an equal share of the 16384 hash slots. Optionally with a
 * replica for some masters (for failover tests) and a shorter node timeout (how long a master may
 * be unreachable before its replica takes over).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { EmbeddedRedis } from './embeddedRedis.js';

const SLOTS = 16384;
/** Cluster nodes also listen on port + 10000 (the cluster bus). */
const BUS_OFFSET = 10000;

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster-bus companion is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    if (taken.has(port) || taken.has(port + BUS_OFFSET)) continue;
    if ((await portIsFree(port)) && (await portIsFree(port + BUS_OFFSET))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}

export interface EmbeddedRedisClusterOptions {
  /** How many of the masters (the first ones) get a replica. @default 0 */
  replicas?: number;
  /** `cluster-node-timeout`, in ms. @default 5000 */
  nodeTimeout?: number;
}

export class EmbeddedRedisCluster {
  private constructor(
    /** The masters as formed (a failover may promote a replica in place of one). */
    readonly nodes: EmbeddedRedis[],
    /** `replicas[i]` replicates `nodes[i]`. */
    readonly replicas: EmbeddedRedis[],
    private readonly dirs: string[],
  ) {}

  static async start(masters = 3, options: EmbeddedRedisClusterOptions = {}): Promise<EmbeddedRedisCluster> {
    const { replicas = 0, nodeTimeout = 5000 } = options;
    const taken = new Set<number>();
    const dirs: string[] = [];
    const startNode = async (): Promise<EmbeddedRedis> => {
      const port = await freeClusterPort(taken);
      taken.add(port);
      const dir = mkdtempSync(join(tmpdir(), 'rxjs-lock-cluster-'));
      dirs.push(dir);
      return EmbeddedRedis.start({
        port,
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeout), '--dir', dir],
      });
    };
    const nodes: EmbeddedRedis[] = [];
    for (let i = 0; i < masters; i++) nodes.push(await startNode());
    const replicaNodes: EmbeddedRedis[] = [];
    for (let i = 0; i < Math.min(replicas, masters); i++) replicaNodes.push(await startNode());
    const cluster = new EmbeddedRedisCluster(nodes, replicaNodes, dirs);
    await cluster.form();
    return cluster;
  }

  /** Startup nodes for an ioredis `Cluster`. */
  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: node.host, port: node.port }));
  }

  /** An ioredis Cluster client on this cluster. */
  connect(): Cluster {
    const client = new Cluster(this.startupNodes, { redisOptions: { maxRetriesPerRequest: 2 } });
    client.on('error', () => undefined);
    return client;
  }

  /** One plain client per node (for inspection and flushing). */
  nodeClients(): Redis[] {
    return this.nodes.map((node) => new Redis({ host: node.host, port: node.port }));
  }

  /** The cluster node id of `node`. */
  async idOf(node: EmbeddedRedis): Promise<string> {
    const client = new Redis({ host: node.host, port: node.port });
    try {
      return (await client.call('CLUSTER', 'MYID')) as string;
    } finally {
      client.disconnect();
    }
  }

  private async form(): Promise<void> {
    const clients = this.nodeClients();
    try {
      const share = Math.ceil(SLOTS / clients.length);
      await Promise.all(clients.map((client, i) => client.call('CLUSTER', 'ADDSLOTSRANGE', String(i * share), String(Math.min(SLOTS, (i + 1) * share) - 1))));
      // A config epoch of its own for each master before they meet, as `redis-cli --cluster create`
      // does. Left at 0, the masters settle their epochs by collision after meeting, one bump per
      // round of pings, for seconds after the cluster reports ok: a slot moved meanwhile (a test's
      // migration) could be claimed back by its old owner with a newer epoch, and the new owner then
      // deletes the slot's keys it no longer serves — seen as leases 'gone' after a migration.
      await Promise.all(clients.map((client, i) => client.call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1))));
      for (const node of this.nodes.slice(1)) await clients[0]!.call('CLUSTER', 'MEET', node.host, String(node.port));
      const deadline = Date.now() + 20_000;
      for (;;) {
        const states = await Promise.all(clients.map((client) => client.call('CLUSTER', 'INFO') as Promise<string>));
        if (states.every((info) => info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${clients.length}`))) break;
        if (Date.now() > deadline) throw new Error(`cluster did not form:\n${states.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await this.attachReplicas(clients);
    } finally {
      clients.forEach((client) => client.disconnect());
    }
  }

  /** Makes each replica replicate its master, and waits until every one is in sync. */
  private async attachReplicas(masters: Redis[]): Promise<void> {
    if (this.replicas.length === 0) return;
    const replicas = this.replicas.map((node) => new Redis({ host: node.host, port: node.port }));
    try {
      for (const replica of replicas) await replica.call('CLUSTER', 'MEET', this.nodes[0]!.host, String(this.nodes[0]!.port));
      const deadline = Date.now() + 30_000;
      const known = this.nodes.length + this.replicas.length;
      for (;;) {
        const states = await Promise.all([...masters, ...replicas].map((client) => client.call('CLUSTER', 'INFO') as Promise<string>));
        if (states.every((info) => info.includes(`cluster_known_nodes:${known}`))) break;
        if (Date.now() > deadline) throw new Error(`replicas did not join:\n${states.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      for (const [i, replica] of replicas.entries()) {
        const masterId = (await masters[i]!.call('CLUSTER', 'MYID')) as string;
        for (;;) {
          try {
            await replica.call('CLUSTER', 'REPLICATE', masterId);
            break;
          } catch (error) {
            // the replica may not know the master's id yet (gossip): ask again shortly
            if (Date.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      }
      for (;;) {
        const infos = await Promise.all(replicas.map((replica) => replica.info('replication')));
        const states = await Promise.all([...masters, ...replicas].map((client) => client.call('CLUSTER', 'INFO') as Promise<string>));
        if (infos.every((info) => info.includes('master_link_status:up')) && states.every((info) => info.includes('cluster_state:ok'))) return;
        if (Date.now() > deadline) throw new Error(`replicas did not sync:\n${infos.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      replicas.forEach((replica) => replica.disconnect());
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.nodes, ...this.replicas].map((node) => node.stop().catch(() => undefined)));
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}
