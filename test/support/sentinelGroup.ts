/**
 * A Sentinel-managed Redis for one test file: a master, its replica, and one Sentinel
 * (`redis-server <config> --sentinel`, started here with a generated config in a temporary
 * directory) that fails the master over quickly (`down-after-milliseconds` 400,
 * `failover-timeout` 3000). Clients are ioredis clients that find the master through the Sentinel
 * (`new Redis({ sentinels, name })`). `stop()` closes the clients and kills every process started
 * here, by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { redisServerBinary } from '../../support/embeddedRedis.js';
import { EPHEMERAL } from './dataLossServers.js';
import { EmbeddedRedis } from './redis.js';
import { eventually } from './timing.js';

export const MASTER_NAME = 'locks';

export interface SentinelGroup {
  readonly master: EmbeddedRedis;
  readonly replica: EmbeddedRedis;
  readonly sentinelPort: number;
  /** A client that finds the master through the Sentinel (closed by `stop()`). */
  client(options?: RedisOptions): Redis;
  /** The address Sentinel gives for the master now: its port. */
  masterPort(): Promise<number>;
  /** Kills every client and process started here. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (free when asked: the Sentinel takes it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export async function sentinelGroup(): Promise<SentinelGroup> {
  const master = await EmbeddedRedis.start({ args: EPHEMERAL });
  const replica = await EmbeddedRedis.start({ args: [...EPHEMERAL, '--replicaof', '127.0.0.1', String(master.port)] });
  const dir = mkdtempSync(join(tmpdir(), 'rxjs-lock-sentinel-'));
  const sentinelPort = await freePort();
  const config = join(dir, 'sentinel.conf');
  // (Sentinel rewrites its config file as it learns the topology: it must be writable.)
  writeFileSync(
    config,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      'daemonize no',
      `dir ${dir}`,
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 1`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 400`,
      `sentinel failover-timeout ${MASTER_NAME} 3000`,
      `sentinel parallel-syncs ${MASTER_NAME} 1`,
      '',
    ].join('\n'),
  );
  const sentinel: ChildProcess = spawn(redisServerBinary(), [config, '--sentinel'], { stdio: 'ignore' });
  const clients: Redis[] = [];
  const admin = new Redis({ host: '127.0.0.1', port: sentinelPort, retryStrategy: () => 50, lazyConnect: false });
  admin.on('error', () => undefined);
  clients.push(admin);

  const group: SentinelGroup = {
    master,
    replica,
    sentinelPort,
    client(options = {}) {
      const redis = new Redis({
        sentinels: [{ host: '127.0.0.1', port: sentinelPort }],
        name: MASTER_NAME,
        maxRetriesPerRequest: 2,
        retryStrategy: () => 100,
        sentinelRetryStrategy: () => 100,
        ...options,
      });
      // The master is killed on purpose: connection errors are expected.
      redis.on('error', () => undefined);
      clients.push(redis);
      return redis;
    },
    async masterPort() {
      const [, port] = (await admin.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string];
      return Number(port);
    },
    async stop() {
      for (const redis of clients) redis.disconnect();
      if (sentinel.exitCode === null && sentinel.signalCode === null) {
        const exited = new Promise((resolve) => sentinel.once('exit', resolve));
        process.kill(sentinel.pid!, 'SIGKILL');
        await exited;
      }
      await Promise.all([replica.stop(), master.stop().catch(() => undefined)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    // The Sentinel watches the master and has found its replica, in sync.
    await eventually(
      async () => {
        const replicas = (await admin.call('SENTINEL', 'replicas', MASTER_NAME).catch(() => [])) as string[][];
        return replicas.some((fields) => {
          const info = Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]]] : [])));
          return Number(info.port) === replica.port && info.flags === 'slave' && info['master-link-status'] === 'ok';
        });
      },
      30_000,
      100,
    );
  } catch (error) {
    await group.stop();
    throw error;
  }
  return group;
}
