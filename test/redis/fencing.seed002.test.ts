/**
 * Seed 002's scenario, on real Redis and two processes: client 1 takes the lock (fence 33) and
 * stalls past its TTL; the lock expires and client 2 takes it (fence 34) and writes; client 1
 * wakes up and writes with 33. The fenced resource refuses that write, and client 1's own stream
 * errors with LockLostError.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError } from '../../src/index.js';
import { FencedResource, RedisLockStore } from '../../src/redis.js';
import type { StalledWriterMessage, StalledWriterSettings } from '../fixtures/stalledWriter.js';
import { connect, EmbeddedRedis } from '../support/redis.js';

let server: EmbeddedRedis;
let client: Redis;

beforeAll(async () => {
  server = await EmbeddedRedis.start();
  client = connect(server);
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

const writer = fileURLToPath(new URL('../fixtures/stalledWriter.ts', import.meta.url));

function startClient1(settings: StalledWriterSettings): {
  child: ChildProcess;
  messages: StalledWriterMessage[];
  next(type: StalledWriterMessage['type']): Promise<StalledWriterMessage>;
} {
  const child = fork(writer, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, STALLED_WRITER: JSON.stringify(settings) } });
  const messages: StalledWriterMessage[] = [];
  const waiters: Array<() => void> = [];
  child.on('message', (m) => {
    messages.push(m as StalledWriterMessage);
    waiters.splice(0).forEach((w) => w());
  });
  const next = (type: StalledWriterMessage['type']) =>
    new Promise<StalledWriterMessage>((resolve, reject) => {
      const check = () => {
        const found = messages.find((m) => m.type === type);
        if (found) resolve(found);
        else waiters.push(check);
      };
      child.once('exit', (code) => reject(new Error(`client 1 exited (${code}) before '${type}'`)));
      check();
    });
  return { child, messages, next };
}

describe('fencing: seed 002', () => {
  it('a stalled holder that wakes after its lease expired cannot overwrite the next holder, and learns it lost the lock', async () => {
    const key = 'file:report';
    const resource = 'resource:report';
    const ttl = 300;
    const one = startClient1({ port: server.port, key, resource, ttl, stallMs: 1200 });
    const acquired = (await one.next('acquired')) as { fence: number };

    // client 2 waits for the lock: it frees up when client 1's lease expires on the server
    const locker2 = createLocker({ store: new RedisLockStore(client), ttl: 10_000, keyPrefix: 'lock:' });
    const fenced = new FencedResource(client, resource);
    let fence2 = 0;
    const written = await lastValueFrom(
      locker2.using(
        key,
        async (lease) => {
          fence2 = lease.fence;
          expect(lease.fence).toBeGreaterThan(acquired.fence); // the story's 34 after 33
          return fenced.write(lease.fence, 'written by client 2');
        },
        { waitTimeout: 5000 },
      ),
    );
    expect(written).toEqual({ accepted: true, fence: fence2 });

    // client 1 wakes up, still believing for an instant that it holds the lock, and writes with 33
    const woke = (await one.next('woke')) as { heldAfterStall: boolean };
    expect(woke.heldAfterStall).toBe(false); // lease.held checks the clock: a careful writer would have stopped here
    expect(await one.next('write')).toEqual({ type: 'write', accepted: false, highestFence: fence2 });
    expect(await one.next('stream')).toMatchObject({ outcome: 'error', errorName: 'LockLostError', reason: 'expired' });
    await new Promise((resolve) => (one.child.exitCode !== null ? resolve(null) : one.child.once('exit', resolve)));
    expect(one.child.exitCode).toBe(0);

    expect(await fenced.read()).toEqual({ fence: fence2, value: 'written by client 2' });
  }, 20_000);
});

describe('FencedResource', () => {
  it('accepts equal and higher fences, refuses lower ones, and validates its input', async () => {
    const r = new FencedResource(client, 'resource:unit');
    expect(await r.read()).toBeUndefined();
    expect(await r.write(5, 'a')).toEqual({ accepted: true, fence: 5 });
    expect(await r.write(5, 'b')).toEqual({ accepted: true, fence: 5 }); // the same holder writes again
    expect(await r.write(4, 'stale')).toEqual({ accepted: false, highestFence: 5 });
    expect(await r.write(9, 'c')).toEqual({ accepted: true, fence: 9 });
    expect(await r.read()).toEqual({ fence: 9, value: 'c' });
    for (const bad of [0, -1, 1.5, NaN, '3']) {
      await expect(r.write(bad as number, 'x')).rejects.toSatisfy((e: unknown) => isLockOptionsError(e) && e.option === 'fence');
    }
    expect(() => new FencedResource(client, '')).toThrow(/key/);
  });

  it('works with lease.fence from a locker: each new holder can write, a previous one cannot', async () => {
    const locker = createLocker({ store: new RedisLockStore(client), keyPrefix: 'lock:' });
    const r = new FencedResource(client, 'resource:leases');
    const first = await firstValueFrom(locker.acquire('leases'));
    await first.release();
    const second = await firstValueFrom(locker.acquire('leases'));
    expect(second.fence).toBeGreaterThan(first.fence);
    expect(await r.write(second.fence, 'second')).toMatchObject({ accepted: true });
    expect(await r.write(first.fence, 'first, too late')).toMatchObject({ accepted: false });
    await second.release();
  });
});
