/**
 * A private Redis Cluster of N masters (no replicas) on this machine, formed with CLUSTER
 * commands (no redis-cli needed): each node owns an equal share of the 16384 hash slots.
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

export class EmbeddedRedisCluster {
  private constructor(
    readonly nodes: EmbeddedRedis[],
    private readonly dirs: string[],
  ) {}

  static async start(masters = 3): Promise<EmbeddedRedisCluster> {
    const taken = new Set<number>();
    const nodes: EmbeddedRedis[] = [];
    const dirs: string[] = [];
    for (let i = 0; i < masters; i++) {
      const port = await freeClusterPort(taken);
      taken.add(port);
      const dir = mkdtempSync(join(tmpdir(), 'rxjs-lock-cluster-'));
      dirs.push(dir);
      nodes.push(
        await EmbeddedRedis.start({
          port,
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000', '--dir', dir],
        }),
      );
    }
    const cluster = new EmbeddedRedisCluster(nodes, dirs);
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

  private async form(): Promise<void> {
    const clients = this.nodeClients();
    try {
      const share = Math.ceil(SLOTS / clients.length);
      await Promise.all(
        clients.map((client, i) => client.call('CLUSTER', 'ADDSLOTSRANGE', String(i * share), String(Math.min(SLOTS, (i + 1) * share) - 1))),
      );
      for (const node of this.nodes.slice(1)) await clients[0]!.call('CLUSTER', 'MEET', node.host, String(node.port));
      const deadline = Date.now() + 20_000;
      for (;;) {
        const states = await Promise.all(clients.map((client) => client.call('CLUSTER', 'INFO') as Promise<string>));
        if (states.every((info) => info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${clients.length}`))) return;
        if (Date.now() > deadline) throw new Error(`cluster did not form:\n${states.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      clients.forEach((client) => client.disconnect());
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}
