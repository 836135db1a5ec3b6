/**
 * Attacks on coalesced writes (`coalesceWrites`, src/backends/redis/protocol/tickWrites.ts): the
 * store corks its client's socket from a tick's second call to the end of the tick. Against a
 * private Redis: the order of every write on the connection (MONITOR against the order of the
 * calls), sockets never left corked (connecting, lazyConnect, no offline queue, the handshake, the
 * user's own cork, disconnect/quit in the tick, frozen and restarted servers, sockets whose cork is
 * missing or throws, autopipelining), exclusion and fences of three lockers at once, and a process
 * that exits in the tick in which it gave locks back (it used to send only the first of them).
 */
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockStoreError } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { ExitingReleaserSettings } from '../fixtures/exitingReleaser.js';
import { forkFixture, messagesOf } from '../support/children.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** A connected client (closed after the test) and a store on it, its scripts loaded. */
async function storeOn(options?: RedisLockStoreOptions, client: Redis = connect(suite.server)): Promise<{ client: Redis; store: RedisLockStore }> {
  suite.closers.push(() => client.disconnect());
  await client.ping();
  const store = new RedisLockStore(client, options);
  await store.tryAcquire('warm-up', 'w', 1000);
  await store.release('warm-up', 'w');
  return { client, store };
}

/** `promise`'s value, or 'hang' after `ms`. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'hang'> =>
  Promise.race([promise, new Promise<'hang'>((resolve) => setTimeout(resolve, ms, 'hang'))]);
/** After this tick and its I/O (setImmediate). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
/** How many times `client`'s socket is corked now. */
const corked = (client: Redis) => (client.stream as unknown as { writableCorked: number }).writableCorked;
/** Counts the writes handed to `client`'s socket (its `_write` / `_writev`). */
function countWrites(client: Redis): { readonly count: number } {
  const stream = client.stream as unknown as {
    _write: (chunk: unknown, encoding: unknown, done: unknown) => void;
    _writev: (chunks: unknown[], done: unknown) => void;
  };
  let count = 0;
  const write = stream._write.bind(stream);
  const writev = stream._writev.bind(stream);
  stream._write = (chunk, encoding, done) => {
    count++;
    write(chunk, encoding, done);
  };
  stream._writev = (chunks, done) => {
    count++;
    writev(chunks, done);
  };
  return {
    get count() {
      return count;
    },
  };
}
/** `p`'s value or error, never a rejection. */
const settle = <T>(p: Promise<T>) =>
  p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );

describe('held writes and the connection’s states', () => {
  it('user commands, a pipeline and a MULTI interleaved with store calls in one tick keep their order', async () => {
    const { client, store } = await storeOn();
    const a = store.tryAcquire('k', 'one', 10_000);
    const g1 = client.get('k');
    const b = store.release('k', 'one');
    const g2 = client.pipeline().get('k').set('x', '1').exec();
    const c = store.tryAcquire('k', 'two', 10_000);
    const g3 = client.multi().get('k').exec();
    const d = store.tryAcquire('k', 'three', 10_000);
    const g4 = client.get('k');
    expect((await a).acquired).toBe(true);
    expect(await g1).toBe('one');
    expect(await b).toBe(true);
    expect((await g2)![0]![1]).toBe(null);
    expect((await c).acquired).toBe(true);
    expect((await g3)![0]![1]).toBe('two');
    expect((await d).acquired).toBe(false);
    expect(await g4).toBe('two');
    expect(corked(client)).toBe(0);
  });

  it('a burst on a client still connecting, on a lazyConnect one, and on one without offline queue: every call settles, nothing stays corked', async () => {
    for (const options of [{}, { lazyConnect: true }]) {
      const client = connect(suite.server, options);
      suite.closers.push(() => client.disconnect());
      const store = new RedisLockStore(client);
      const calls = Array.from({ length: 10 }, (_, i) => settle(store.tryAcquire(`c${i}`, 't', 10_000)));
      const rel = settle(store.release('c0', 't'));
      const again = settle(store.tryAcquire('c0', 'u', 10_000));
      const results = await within(Promise.all([...calls, rel, again]), 5000);
      expect(results).not.toBe('hang');
      expect((results as Array<{ ok: boolean }>).every((r) => r.ok)).toBe(true);
      expect(await suite.admin.get('c0')).toBe('u');
      await tick();
      expect(corked(client)).toBe(0);
      await suite.admin.flushall();
    }
    const client = connect(suite.server, { enableOfflineQueue: false });
    suite.closers.push(() => client.disconnect());
    const store = new RedisLockStore(client);
    const early = await within(Promise.all(Array.from({ length: 5 }, (_, i) => settle(store.tryAcquire(`e${i}`, 't', 10_000)))), 5000);
    expect(early).not.toBe('hang');
    await eventually(() => client.status === 'ready');
    const later = await within(Promise.all(Array.from({ length: 5 }, (_, i) => store.tryAcquire(`l${i}`, 't', 10_000))), 5000);
    expect(later).not.toBe('hang');
  });

  it('a burst made during the connect handshake settles', async () => {
    const client = connect(suite.server);
    suite.closers.push(() => client.disconnect());
    const store = new RedisLockStore(client);
    const calls: Array<Promise<unknown>> = [];
    client.on('connect', () => {
      for (let i = 0; i < 5; i++) calls.push(settle(store.tryAcquire(`h${i}`, 't', 10_000)));
    });
    await eventually(() => calls.length === 5);
    const results = await within(Promise.all(calls), 5000);
    expect(results).not.toBe('hang');
  });

  it('the user’s own cork on the same socket: the store neither undoes it nor leaves one of its own', async () => {
    const { client, store } = await storeOn();
    client.stream.cork();
    const calls = [store.tryAcquire('a', 't', 10_000), store.tryAcquire('b', 't', 10_000)];
    await tick();
    expect(corked(client)).toBe(1);
    client.stream.uncork();
    expect(await within(Promise.all(calls), 3000)).not.toBe('hang');
    client.stream.cork();
    client.stream.cork();
    const more = [store.tryAcquire('c', 't', 10_000), store.tryAcquire('d', 't', 10_000)];
    client.stream.uncork();
    client.stream.uncork();
    await tick();
    expect(corked(client)).toBe(0);
    expect(await within(Promise.all(more), 3000)).not.toBe('hang');
  });

  it('disconnect(), quit() and disconnect(true) in the same tick as a burst: every call settles, what was granted is in Redis', async () => {
    for (const how of ['disconnect', 'quit', 'reconnect'] as const) {
      const { client, store } = await storeOn();
      const before = Array.from({ length: 6 }, (_, i) => settle(store.tryAcquire(`${how}${i}`, 't', 10_000)));
      if (how === 'disconnect') client.disconnect();
      else if (how === 'quit') void client.quit().catch(() => undefined);
      else client.disconnect(true);
      const after = Array.from({ length: 3 }, (_, i) => settle(store.tryAcquire(`${how}-after${i}`, 't', 10_000)));
      const results = await within(Promise.all([...before, ...after]), 6000);
      expect(results, how).not.toBe('hang');
      for (const [i, r] of (results as Array<{ ok: boolean; v?: { acquired: boolean } }>).entries()) {
        const key = i < 6 ? `${how}${i}` : `${how}-after${i - 6}`;
        if (r.ok && r.v?.acquired) expect(await suite.admin.get(key)).toBe('t');
      }
      if (how === 'reconnect') {
        await eventually(() => client.status === 'ready');
        expect((await store.tryAcquire('fresh', 'x', 1000)).acquired).toBe(true);
      }
    }
  });

  it('a server frozen while writes are held: the locker’s commandTimeout fails the calls, and the locker works once it thaws', async () => {
    const { client, store } = await storeOn();
    const locker = createLocker({ store, ttl: 5_000, commandTimeout: 300 });
    suite.closers.push(() => locker.close());
    suite.server.pause();
    let resumed = false;
    try {
      const attempts = Array.from({ length: 10 }, (_, i) => settle(firstValueFrom(locker.acquire(`f${i}`, { waitTimeout: 0 }))));
      const results = await within(Promise.all(attempts), 5000);
      expect(results).not.toBe('hang');
      for (const r of results as Array<{ ok: boolean; e?: unknown }>) {
        expect(r.ok).toBe(false);
        expect(isLockStoreError(r.e)).toBe(true);
      }
      suite.server.resume();
      resumed = true;
      await eventually(async () => {
        const r = await settle(firstValueFrom(locker.acquire('after', { waitTimeout: 2000 })));
        if (r.ok) await r.v.release();
        return r.ok;
      }, 5000);
      expect(corked(client)).toBe(0);
    } finally {
      if (!resumed) suite.server.resume();
    }
  });

  it('two stores on one client, one coalescing and one not: their calls run in the order made', async () => {
    const client = connect(suite.server);
    const { store: on } = await storeOn({}, client);
    const off = new RedisLockStore(client, { coalesceWrites: false });
    const a = on.tryAcquire('k', 'on', 10_000);
    const b = off.tryAcquire('k', 'off', 10_000);
    const c = on.release('k', 'on');
    const d = off.tryAcquire('k', 'off', 10_000);
    const e = on.tryAcquire('k', 'on2', 10_000);
    expect((await a).acquired).toBe(true);
    expect((await b).acquired).toBe(false);
    expect(await c).toBe(true);
    expect((await d).acquired).toBe(true);
    expect((await e).acquired).toBe(false);
    expect(await suite.admin.get('k')).toBe('off');
  });
});

describe('order', () => {
  it('MONITOR order equals call order for a random mix of store calls and user commands across ticks, microtasks and nextTicks', async () => {
    const { client, store } = await storeOn();
    const plain = new RedisLockStore(client, { coalesceWrites: false, wakeUp: false });
    const monitor = await suite.admin.duplicate().monitor();
    suite.closers.push(() => monitor.disconnect());
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return;
      const tag = args.find((a) => /^T\d+$/.test(a));
      if (tag !== undefined) seen.push(tag);
    });
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const made: string[] = [];
    const pending: Array<Promise<unknown>> = [];
    let n = 0;
    const tag = () => `T${n++}`;
    const ops: Array<() => void> = [
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.tryAcquire(`k${n % 5}`, t, 5_000));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.tryAcquireInLine(`k${n % 5}`, t, 5_000, 1, 'keep'));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.release(`k${n % 5}`, t));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.extend(`k${n % 5}`, t, 5_000));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.leave(`k${n % 5}`, t));
      },
      () => {
        const a = tag();
        const b = tag();
        made.push(a, b);
        pending.push(
          store.extendMany([
            { key: 'k1', token: a, ttlMs: 5_000 },
            { key: 'k2', token: b, ttlMs: 5_000 },
          ]),
        );
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.tryAcquireShared(`s${n % 3}`, t, 5_000, 1, 3, 'keep'));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(store.releaseShared(`s${n % 3}`, t));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(plain.tryAcquire(`k${n % 5}`, t, 5_000));
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(client.get(t));
      },
      () => {
        const a = tag();
        const b = tag();
        made.push(a, b);
        pending.push(client.pipeline().get(a).get(b).exec());
      },
      () => {
        const t = tag();
        made.push(t);
        pending.push(client.multi().get(t).exec());
      },
    ];
    const one = () => ops[Math.floor(random() * ops.length)]!();
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 20; i++) {
        const where = random();
        if (where < 0.4) one();
        else if (where < 0.6) void Promise.resolve().then(one);
        else if (where < 0.75) process.nextTick(one);
        else if (where < 0.85) void Promise.resolve().then(() => process.nextTick(() => void Promise.resolve().then(one)));
        else setImmediate(one);
      }
      if (random() < 0.5) await tick();
    }
    await sleep(20);
    await Promise.allSettled(pending);
    await eventually(() => seen.length >= made.length, 5000);
    expect(seen).toEqual(made);
    expect(corked(client)).toBe(0);
  });
});

describe('three clients, many keys', () => {
  interface Section {
    key: string;
    asked: number;
    released: number;
    fence: number;
  }

  /** 3 clients (a locker each) × 6 keys × 2 loops, `iterations` acquisitions each; `midway` runs once a third of them are done. */
  async function contend(iterations: number, midway?: () => Promise<void>) {
    const lockers = await Promise.all(
      [0, 1, 2].map(async () => {
        const { store } = await storeOn();
        const locker = createLocker({ store, ttl: 2_000, renew: { interval: 100 }, commandTimeout: 500, retry: { minDelay: 1, jitter: 3 } });
        suite.closers.push(() => locker.close());
        return locker;
      }),
    );
    const inside = new Map<string, number>();
    let overlaps = 0;
    let errors = 0;
    const sections: Section[] = [];
    const loop = async (locker: (typeof lockers)[number], key: string) => {
      for (let i = 0; i < iterations; i++) {
        const asked = performance.now();
        let lease;
        try {
          lease = await firstValueFrom(locker.acquire(key, { waitTimeout: 5_000 }));
        } catch {
          errors++;
          continue;
        }
        const now = (inside.get(key) ?? 0) + 1;
        inside.set(key, now);
        if (now > 1) overlaps++;
        await sleep(i % 3);
        inside.set(key, inside.get(key)! - 1);
        await lease.release().catch(() => undefined);
        sections.push({ key, asked, released: performance.now(), fence: lease.fence });
        if (sections.length === (3 * 12 * iterations) / 3) disturbed!();
      }
    };
    const loops = lockers.flatMap((locker) => Array.from({ length: 12 }, (_, i) => loop(locker, `key${i % 6}`)));
    let disturbed: (() => void) | undefined;
    const third = new Promise<void>((resolve) => {
      disturbed = resolve;
    });
    let disturbedAt = -1;
    const disturbance =
      midway === undefined
        ? Promise.resolve()
        : third.then(midway).then(() => {
            disturbedAt = sections.length;
          });
    const done = await within(Promise.all([...loops, disturbance]), 9_000);
    return { done, overlaps, errors, sections, disturbedAt };
  }

  /** Fencing: a grant asked for after another's release was acknowledged has a greater fence. */
  function fenceInversions(sections: Section[]): number {
    let inversions = 0;
    for (const a of sections) for (const b of sections) if (a.key === b.key && a !== b && a.released < b.asked && a.fence >= b.fence) inversions++;
    return inversions;
  }

  it('3 lockers × 6 keys × 2 loops each: exclusive, and fences grow', async () => {
    const { done, overlaps, errors, sections } = await contend(12);
    expect(done).not.toBe('hang');
    expect(errors).toBe(0);
    expect(overlaps).toBe(0);
    expect(sections).toHaveLength(3 * 12 * 12);
    expect(fenceInversions(sections)).toBe(0);
  });

  it('a server killed and restarted empty in the middle: every loop ends, fences keep growing', async () => {
    const { done, sections, disturbedAt } = await contend(30, async () => {
      await suite.server.kill();
      await sleep(50);
      await suite.server.restart();
    });
    expect(done).not.toBe('hang');
    // (the restart came in the middle: acquisitions went on after it)
    expect(disturbedAt).toBeGreaterThan(0);
    expect(sections.length).toBeGreaterThan(disturbedAt);
    expect(fenceInversions(sections)).toBe(0);
  });
});

describe('a process that exits right after giving locks back', () => {
  const fixture = fileURLToPath(new URL('../fixtures/exitingReleaser.ts', import.meta.url));

  async function run(settings: Omit<ExitingReleaserSettings, 'port'>): Promise<number> {
    const child = forkFixture(fixture, 'EXITING_RELEASER', { ...settings, port: suite.server.port });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await messagesOf(child)('held');
    await exited;
    await sleep(50);
    let left = 0;
    for (let i = 0; i < settings.keys; i++) if ((await suite.admin.exists(`exiting:${i}`)) === 1) left++;
    return left;
  }

  for (const how of ['store', 'locker', 'crash'] as const)
    it(`${how}: every lock it gave back in its last tick is free`, async () => {
      const plain = await run({ keys: 8, coalesceWrites: false, how });
      const coalesced = await run({ keys: 8, coalesceWrites: true, how });
      expect({ plain, coalesced }).toEqual({ plain: 0, coalesced: 0 });
    }, 60_000);
});

describe('odd sockets, clients and sizes', () => {
  it('a socket without cork, one whose cork throws, one whose uncork throws: every call settles, in order', async () => {
    for (const odd of ['no cork', 'cork throws', 'uncork throws'] as const) {
      const { client, store } = await storeOn();
      const socket = client.stream as unknown as Record<string, unknown>;
      const uncork = (socket.uncork as () => void).bind(socket);
      if (odd === 'no cork') socket.cork = undefined;
      else if (odd === 'cork throws')
        socket.cork = () => {
          throw new Error('no cork here');
        };
      else
        socket.uncork = () => {
          uncork();
          throw new Error('uncork failed');
        };
      const first = store.tryAcquire('k', 'one', 10_000);
      const released = store.release('k', 'one');
      const second = store.tryAcquire('k', 'two', 10_000);
      const results = await within(Promise.all([first, released, second]), 3_000);
      expect(results, odd).not.toBe('hang');
      expect(await suite.admin.get('k'), odd).toBe('two');
      expect(corked(client), odd).toBe(0);
      await suite.admin.flushall();
    }
  });

  it('a client with enableAutoPipelining: order kept, nothing left corked', async () => {
    const { client, store } = await storeOn({}, connect(suite.server, { enableAutoPipelining: true }));
    const a = store.tryAcquire('k', 'one', 10_000);
    const g = client.get('k');
    const b = store.release('k', 'one');
    const c = store.tryAcquire('k', 'two', 10_000);
    expect((await a).acquired).toBe(true);
    expect(await g).toBe('one');
    expect(await b).toBe(true);
    expect((await c).acquired).toBe(true);
    await tick();
    expect(corked(client)).toBe(0);
  });

  it('the first store call of a tick is written at once, after the user’s own writes and another client’s held burst', async () => {
    const { client: other, store: otherStore } = await storeOn();
    const { client, store } = await storeOn();
    const writes = countWrites(client);
    const burst = Array.from({ length: 5 }, (_, i) => otherStore.tryAcquire(`o${i}`, 't', 10_000));
    const mine = client.get('x');
    const before = writes.count;
    const lone = store.tryAcquire('lone', 't', 10_000);
    expect(writes.count).toBe(before + 1);
    expect(corked(other)).toBe(1); // the other client's burst is held, not this one
    await Promise.all([...burst, mine, lone]);
  });

  it('3,000 acquisitions of 1 KB in one tick while the server is frozen: all granted, in order, once it thaws', async () => {
    const { client, store } = await storeOn();
    const pad = 'x'.repeat(1024);
    suite.server.pause();
    let calls: Array<Promise<{ acquired: boolean }>>;
    try {
      calls = Array.from({ length: 3_000 }, (_, i) => store.tryAcquire(`big${i % 1_000}`, `${pad}${i}`, 10_000));
      await sleep(200);
    } finally {
      suite.server.resume();
    }
    const results = await within(Promise.all(calls), 8_000);
    expect(results).not.toBe('hang');
    const acquired = (results as Array<{ acquired: boolean }>).map((r) => r.acquired);
    // the first call of each key was made first, so it won; the two after it were refused
    expect(acquired.slice(0, 1_000).every(Boolean)).toBe(true);
    expect(acquired.slice(1_000).some(Boolean)).toBe(false);
    expect(await suite.admin.get('big999')).toBe(`${pad}999`);
    expect(corked(client)).toBe(0);
  });
});
