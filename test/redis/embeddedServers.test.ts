/**
 * The servers tests start are private in their data too, not only in their port: a server never
 * starts from a snapshot another one wrote, and `restart()` brings one back empty even when a
 * snapshot was written — as a production restart without persistence does. (redis-server loads
 * `dump.rdb` from its working directory at start, whatever `--save` says; a replica writes one there
 * on every full sync. With every server in the test process's directory, a replica's sync of one
 * suite became the data another suite's "empty" restart started from.)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, EmbeddedRedis } from '../support/redis.js';

const started: EmbeddedRedis[] = [];
const clients: Redis[] = [];

async function server(args?: string[]): Promise<{ server: EmbeddedRedis; client: Redis }> {
  const server = await EmbeddedRedis.start(args === undefined ? {} : { args });
  started.push(server);
  const client = connect(server);
  clients.push(client);
  return { server, client };
}

async function dir(client: Redis): Promise<string> {
  const [, value] = (await client.config('GET', 'dir')) as [string, string];
  return value;
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.disconnect();
  await Promise.all(started.splice(0).map((s) => s.stop().catch(() => undefined)));
});

describe('EmbeddedRedis keeps each server’s files to itself', () => {
  it('gives every server a directory of its own, outside the working directory', async () => {
    const a = await server();
    const b = await server();
    const dirA = await dir(a.client);
    const dirB = await dir(b.client);
    expect(dirA).not.toBe(dirB);
    expect(dirA).not.toBe(process.cwd());
    expect(dirB).not.toBe(process.cwd());
  });

  it('a server does not start from the snapshot another one saved', async () => {
    const a = await server();
    await a.client.set('left-behind', '1');
    await a.client.save();
    expect(existsSync(join(await dir(a.client), 'dump.rdb'))).toBe(true);
    const b = await server();
    expect(await b.client.dbsize()).toBe(0);
  });

  it('restart() brings a server back empty, even after it saved a snapshot', async () => {
    const a = await server();
    await a.client.set('left-behind', '1');
    await a.client.save();
    await a.server.kill();
    await a.server.restart();
    const again = connect(a.server);
    clients.push(again);
    expect(await again.dbsize()).toBe(0);
  });

  it('a directory given in the arguments is the one used', async () => {
    const a = await server();
    const own = await dir(a.client);
    const b = await server(['--dir', own]);
    expect(await dir(b.client)).toBe(own);
  });

  it('stop() removes the directory it made', async () => {
    const a = await server();
    const own = await dir(a.client);
    await a.client.save();
    a.client.disconnect();
    await a.server.stop();
    expect(existsSync(own)).toBe(false);
  });
});
