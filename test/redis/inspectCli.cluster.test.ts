/**
 * `rxjs-lock inspect --cluster` on a real 3-master Redis Cluster: locks whose keys live on every
 * master are all listed (each master is scanned; each lock is inspected on the node of its slot).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import type { Cluster } from 'ioredis';
import { firstValueFrom, forkJoin } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { lockKeyCount } from '../support/lockKeys.js';

let cluster: EmbeddedRedisCluster;
let client: Cluster;
let locker: Locker;

beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  client = cluster.connect();
  locker = createLocker({ store: new RedisLockStore(client) });
}, 60_000);
afterAll(async () => {
  await locker?.close();
  client?.disconnect();
  await cluster?.stop();
});

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = resolve(import.meta.dirname, '..', '..');
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', resolve(root, 'src/cli.ts'), ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr });
    });
  });
}

describe('rxjs-lock inspect --cluster', () => {
  it('lists the locks held on every master', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `order:${i}`);
    const leases = await firstValueFrom(forkJoin(keys.map((key) => locker.acquire(key, { ttl: 20_000 }))));
    const nodes = cluster.nodeClients();
    const spread = await Promise.all(nodes.map((node) => lockKeyCount(node)));
    nodes.forEach((node) => node.disconnect());
    expect(spread.every((count) => count > 0)).toBe(true);
    const node = cluster.startupNodes[0]!;
    const run = await cli('inspect', `redis://${node.host}:${node.port}`, 'order:*', '--cluster', '--json');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const listed = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { key: string; token: string });
    expect(listed.map((l) => [l.key, l.token]).sort()).toEqual(leases.map((lease) => [lease.key, lease.token]).sort());
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('lists the shared locks held on every master', async () => {
    const keys = Array.from({ length: 9 }, (_, i) => `pool:${i}`);
    const leases = await firstValueFrom(
      forkJoin(keys.map((key, i) => (i % 2 === 0 ? locker.acquirePermit(key, { limit: 2, ttl: 20_000 }) : locker.acquireWriteLock(key, { ttl: 20_000 })))),
    );
    const node = cluster.startupNodes[0]!;
    const run = await cli('inspect', `redis://${node.host}:${node.port}`, 'pool:*', '--cluster', '--json');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const listed = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; key: string; holders: Array<{ token: string }> });
    expect(listed.map((l) => [l.kind, l.key, l.holders[0]!.token]).sort()).toEqual(leases.map((lease) => ['shared', lease.key, lease.token]).sort());
    await Promise.all(leases.map((lease) => lease.release()));
  });
});
