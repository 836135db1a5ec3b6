/**
 * `locker.close()` on a real Redis (issue #10, "a locker that can be closed"): new work is refused
 * without a command sent; waiting acquisitions fail with LockerClosedError and leave the Redis
 * line (the line is empty once close() resolves, also when an attempt was in flight); held leases
 * are deleted in Redis and their streams error with LockLostError 'locker-closed' (even with
 * `onLost: 'notify'`); `release()` afterwards resolves false; no renewal is sent after close
 * (INFO commandstats); `events$` completes; `close()` twice is one promise; `await using` works;
 * the user's ioredis client is not closed (it still answers PING) and neither is the store; with
 * Redis frozen (SIGSTOP) close() still resolves within about commandTimeout. Last, a child process
 * that holds and waits for locks in memory and on Redis, then closes its lockers, its stores and
 * its clients, exits by itself.
 */
import { fileURLToPath } from 'node:url';
import { finalize, firstValueFrom, NEVER, type Observable, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockerClosedError, isLockLostError, type Lease, type LockerOptions, type LockEvent, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { helperKey, RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';
import type { ClosingWorkerReport, ClosingWorkerSettings } from '../fixtures/closingWorker.js';
import { exitOf, forkFixture, killIfRunning, messagesOf, within, CHILD_READY_MS } from '../support/children.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const closingWorker = fileURLToPath(new URL('../fixtures/closingWorker.ts', import.meta.url));

const suite = redisSuite({ unhandled: 'afterEach' });

/** A "process": the user's own client, a store on it and a locker on the store. */
function side(lockerOptions: LockerOptions = {}, storeOptions: RedisLockStoreOptions = {}) {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, storeOptions);
  const locker = createLocker({ store, commandTimeout: 1_000, ...lockerOptions });
  const events: LockEvent[] = [];
  let completed = false;
  locker.events$.subscribe({ next: (e) => events.push(e), complete: () => (completed = true) });
  suite.closers.push(() => {
    store.close();
    client.disconnect();
  });
  return { client, store, locker, events, completed: () => completed };
}

function watch<T>(source: Observable<T>) {
  const seen: { values: T[]; error?: unknown; completed: boolean; sub?: Subscription } = { values: [], completed: false };
  seen.sub = source.subscribe({ next: (v) => seen.values.push(v), error: (e) => (seen.error = e), complete: () => (seen.completed = true) });
  return seen;
}

/** Calls per command on the server since the last RESETSTAT, but for connection upkeep and INFO. */
async function commandCalls(): Promise<Record<string, number>> {
  const ignored = new Set(['info', 'ping', 'client', 'hello', 'select', 'quit', 'command', 'config']);
  const calls: Record<string, number> = {};
  for (const match of (await suite.admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    // (Redis 7 names subcommands `config|resetstat`, `client|list`…)
    if (!ignored.has(match[1]!.split('|')[0]!)) calls[match[1]!] = Number(match[2]);
  }
  return calls;
}

const lineOf = (key: string) => helperKey(`lock:${key}`, 'line');
/** Lock keys and waiters' lines left on the server (fence counters aside). */
const keysLeft = async () => (await suite.admin.keys('*')).filter((k) => !k.startsWith(`${RESERVED_PREFIX}fence:`)).sort();

describe('new work after close()', () => {
  it('acquire, withLock and using error with LockerClosedError, and nothing reaches Redis', async () => {
    const { locker } = side();
    await locker.close();
    await suite.admin.config('RESETSTAT');
    for (const source of [locker.acquire('k'), NEVER.pipe(locker.withLock('k')), locker.using('k', () => NEVER)]) {
      const error = await firstValueFrom(source as Observable<unknown>).catch((e: unknown) => e);
      expect(isLockerClosedError(error)).toBe(true);
    }
    expect(await commandCalls()).toEqual({});
  });
});

describe('waiting acquisitions', () => {
  it('fail with LockerClosedError and leave the Redis line: it is empty once close() resolves', async () => {
    const h = side();
    const w = side();
    const held = await firstValueFrom(h.locker.acquire('k'));
    const waiters = Array.from({ length: 3 }, () => watch(w.locker.acquire('k', { waitTimeout: 60_000 })));
    await eventually(async () => (await suite.admin.zcard(lineOf('k'))) === 1, 3_000);
    await w.locker.close();
    expect(await suite.admin.zcard(lineOf('k'))).toBe(0);
    for (const waiter of waiters) expect(isLockerClosedError(waiter.error)).toBe(true);
    expect(w.events.filter((e) => e.type === 'closed')).toHaveLength(3);
    // H's lock is untouched, and its release frees the key (nobody left in line to hand it to)
    expect(await suite.admin.get('lock:k')).toBe(held.token);
    expect(await held.release()).toBe(true);
    expect(await keysLeft()).toEqual([]);
  });

  it('a waiter with nothing in flight at close: close() waits for its leave, however slow', async () => {
    const h = side();
    const w = side();
    // W's leave calls are 100 ms late (a slow network or a loaded machine); nothing else is
    let leaving = 0;
    const slowStore = Object.create(w.store) as RedisLockStore;
    slowStore.leave = (...args) => (
      leaving++,
      sleep(100)
        .then(() => w.store.leave(...args))
        .finally(() => leaving--)
    );
    const locker = createLocker({ store: slowStore, commandTimeout: 1_000 });
    const held = await firstValueFrom(h.locker.acquire('k'));
    const waiter = watch(locker.acquire('k', { waitTimeout: 60_000 }));
    await eventually(async () => (await suite.admin.zcard(lineOf('k'))) === 1, 3_000);
    await locker.close();
    expect(isLockerClosedError(waiter.error)).toBe(true);
    expect({ leavesInFlight: leaving, placesInLine: await suite.admin.zcard(lineOf('k')) }).toEqual({ leavesInFlight: 0, placesInLine: 0 });
    await held.release();
    expect(await keysLeft()).toEqual([]);
  });

  it('an attempt in flight at close: the waiter fails at once, and the line is empty once close() resolves', async () => {
    const h = side();
    const w = side();
    // W's store sends its queueing attempts 150 ms late, so close() meets one in flight, and its
    // leave calls 100 ms late (a slow network): close() must wait for both, well within its
    // commandTimeout of 1 s
    const slowStore = Object.create(w.store) as RedisLockStore;
    let inFlight = 0;
    const tracked = <T>(p: Promise<T>) => (inFlight++, p.finally(() => inFlight--));
    slowStore.tryAcquireInLine = (...args) => tracked(sleep(150).then(() => w.store.tryAcquireInLine(...args)));
    slowStore.tryAcquire = (...args) => tracked(w.store.tryAcquire(...args));
    slowStore.leave = (...args) => tracked(sleep(100).then(() => w.store.leave(...args)));
    slowStore.release = (...args) => tracked(w.store.release(...args));
    const locker = createLocker({ store: slowStore, commandTimeout: 1_000 });
    const held = await firstValueFrom(h.locker.acquire('k'));
    const waiter = watch(locker.acquire('k', { waitTimeout: 60_000, retry: { minDelay: 10, jitter: 0 } }));
    // the first attempt is refused at once; the second one queues, slowly
    await eventually(() => inFlight === 1 && waiter.error === undefined, 3_000, 1);
    await sleep(50);
    expect(inFlight).toBe(1);
    const closing = locker.close();
    await sleep(0);
    expect(isLockerClosedError(waiter.error)).toBe(true);
    await closing;
    expect({ storeCallsInFlight: inFlight, placesInLine: await suite.admin.zcard(lineOf('k')) }).toEqual({ storeCallsInFlight: 0, placesInLine: 0 });
    await held.release();
    expect(await keysLeft()).toEqual([]);
  });
});

describe('held leases', () => {
  it('are deleted in Redis; lost$ says locker-closed; release() afterwards resolves false', async () => {
    const { locker, events } = side();
    const leases = await Promise.all(['a', 'b', 'c'].map((k) => firstValueFrom(locker.acquire(k))));
    for (const lease of leases) expect(await suite.admin.get(`lock:${lease.key}`)).toBe(lease.token);
    const lost = leases.map((lease) => firstValueFrom(lease.lost$));
    await locker.close();
    expect(await keysLeft()).toEqual([]);
    for (const error of await Promise.all(lost)) expect(error).toMatchObject({ name: 'LockLostError', reason: 'locker-closed' });
    expect(
      events
        .filter((e) => e.type === 'lost')
        .map((e) => (e as { id: string }).id)
        .sort(),
    ).toEqual(leases.map((l) => l.id).sort());
    for (const lease of leases) await expect(lease.release()).resolves.toBe(false);
  });

  it('withLock and using streams error with LockLostError locker-closed even with onLost: notify, their work stops, their keys are deleted', async () => {
    const { locker, events } = side({ onLost: 'notify' });
    const stopped: string[] = [];
    const streams = [
      watch(
        NEVER.pipe(
          finalize(() => stopped.push('withLock 1')),
          locker.withLock('s1'),
        ),
      ),
      watch(
        NEVER.pipe(
          finalize(() => stopped.push('withLock 2')),
          locker.withLock('s2'),
        ),
      ),
      watch(locker.using('s3', () => NEVER.pipe(finalize(() => stopped.push('using'))))),
    ];
    // Held by the streams, not only set in Redis: a key is there before its answer reaches the
    // locker, and an acquisition still waiting for it fails with LockerClosedError instead.
    await eventually(async () => events.filter((e) => e.type === 'acquired').length === 3 && (await keysLeft()).length === 3, 3_000);
    await locker.close();
    for (const stream of streams) {
      expect(isLockLostError(stream.error), String(stream.error)).toBe(true);
      expect(stream.error).toMatchObject({ reason: 'locker-closed' });
    }
    expect(stopped.sort()).toEqual(['using', 'withLock 1', 'withLock 2']);
    expect(await keysLeft()).toEqual([]);
  });

  it('no renewal is sent after close (INFO commandstats)', async () => {
    const { locker } = side();
    await Promise.all(['a', 'b'].map((k) => firstValueFrom(locker.acquire(k, { ttl: 300, renew: { interval: 30 } }))));
    await suite.admin.config('RESETSTAT');
    await sleep(100);
    const whileHeld = await commandCalls();
    expect(Object.values(whileHeld).reduce((a, b) => a + b, 0)).toBeGreaterThan(0); // renewals ran
    await locker.close();
    await suite.admin.config('RESETSTAT');
    await sleep(300); // ten renewal intervals
    expect(await commandCalls()).toEqual({});
  });
});

describe('the close() promise and what it leaves alone', () => {
  it('close() twice and Symbol.asyncDispose are one promise; events$ completes', async () => {
    const { locker, completed } = side();
    await firstValueFrom(locker.acquire('k'));
    const first = locker.close();
    expect(locker.close()).toBe(first);
    expect(locker[Symbol.asyncDispose]()).toBe(first);
    await first;
    expect(completed()).toBe(true);
    expect(await keysLeft()).toEqual([]);
  });

  it('`await using` closes a Redis locker at the end of the block, giving its leases back', async () => {
    const client = connect(suite.server);
    const store = new RedisLockStore(client);
    suite.closers.push(() => (store.close(), client.disconnect()));
    let lease: Lease;
    let escaped: Locker;
    {
      await using locker = createLocker({ store });
      escaped = locker;
      lease = await firstValueFrom(locker.acquire('k'));
      expect(await suite.admin.get('lock:k')).toBe(lease.token);
    }
    expect(escaped.closed).toBe(true);
    expect(lease.held).toBe(false);
    expect(await suite.admin.exists('lock:k')).toBe(0);
  });

  it("the user's ioredis client is not closed (it answers PING) and the store works on; store.close() closes only the connection the store opened", async () => {
    const h = side();
    const w = side();
    const held = await firstValueFrom(h.locker.acquire('k'));
    const waiter = watch(w.locker.acquire('k', { waitTimeout: 60_000 }));
    await eventually(async () => (await suite.admin.zcard(lineOf('k'))) === 1, 3_000);
    const pubsubClients = async () =>
      String(await suite.admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
        .split('\n')
        .filter((l) => l.trim() !== '').length;
    expect(await pubsubClients()).toBe(1); // W's store opened its wake-up connection
    await w.locker.close();
    expect(isLockerClosedError(waiter.error)).toBe(true);
    expect(w.client.status).toBe('ready');
    expect(await w.client.ping()).toBe('PONG');
    // the store was not closed: a new locker on it takes locks, and is woken by it
    const again = createLocker({ store: w.store });
    const next = firstValueFrom(again.acquire('k', { waitTimeout: 5_000 }));
    await sleep(20);
    await held.release();
    const lease = await next;
    expect(await suite.admin.get('lock:k')).toBe(lease.token);
    await again.close();
    w.store.close();
    await eventually(async () => (await pubsubClients()) === 0, 3_000);
    expect(await w.client.ping()).toBe('PONG');
  });
});

describe('a frozen Redis (SIGSTOP) during close', () => {
  it('close() still resolves within about commandTimeout; once Redis is back the keys and the line are gone', async () => {
    const COMMAND_TIMEOUT = 600;
    const h = side();
    const w = side({ commandTimeout: COMMAND_TIMEOUT });
    const held = await firstValueFrom(h.locker.acquire('busy'));
    const leases = await Promise.all(['a', 'b'].map((k) => firstValueFrom(w.locker.acquire(k))));
    const third = watch(w.locker.acquire('c'));
    const waiter = watch(w.locker.acquire('busy', { waitTimeout: 60_000 }));
    await eventually(async () => (await suite.admin.zcard(lineOf('busy'))) === 1 && third.values.length === 1, 3_000);
    leases.push(third.values[0]!);
    let ms: number;
    suite.server.pause();
    try {
      const started = performance.now();
      await w.locker.close();
      ms = performance.now() - started;
    } finally {
      suite.server.resume();
    }
    expect(isLockerClosedError(waiter.error)).toBe(true);
    for (const lease of leases) expect(lease.held).toBe(false);
    expect(ms, `close() took ${Math.round(ms)} ms with commandTimeout ${COMMAND_TIMEOUT}`).toBeLessThan(COMMAND_TIMEOUT * 1.5);
    expect(w.events.some((e) => e.type === 'release-failed')).toBe(true);
    // the releases and the leave were sent while Redis was frozen; it runs them once thawed
    await eventually(async () => (await suite.admin.zcard(lineOf('busy'))) === 0, 3_000);
    await eventually(async () => (await suite.admin.exists('lock:a', 'lock:b', 'lock:c')) === 0, 3_000);
    await held.release();
    expect(await keysLeft()).toEqual([]);
  });
});

describe('a process that closes its lockers, stores and clients', () => {
  it('exits by itself (code 0, within 5 s of its report), leaving no lock and no line in Redis', async () => {
    const child = forkFixture(closingWorker, 'CLOSING_WORKER', { port: suite.server.port } satisfies ClosingWorkerSettings);
    const exited = exitOf(child, 30_000);
    try {
      const message = messagesOf(child);
      await within(message('ready'), CHILD_READY_MS, "'ready' from the closing worker");
      // it holds r-held and r-lease, and waits in the r-held line
      expect(await keysLeft()).toEqual(['lock:r-held', 'lock:r-lease', lineOf('r-held'), helperKey('lock:r-held', 'places')].sort());
      child.send('close');
      const report = await within(message<ClosingWorkerReport>('report'), 10_000, 'report from the closing worker');
      const reportedAt = performance.now();
      const exit = await Promise.race([exited, exitOf(child, 5_000)]);
      const exitMs = performance.now() - reportedAt;
      // first what the process did at the end, then (softly, to see every difference) how each
      // of its acquisitions ended
      expect(exit).toEqual({ code: 0, signal: null });
      expect(exitMs).toBeLessThan(5_000);
      expect(
        report.activeResources.filter((r) => r !== 'PipeWrap'),
        'nothing but the IPC channel keeps it alive',
      ).toEqual([]);
      expect.soft(await keysLeft()).toEqual([]);
      expect.soft(report.unhandled).toEqual([]);
      expect
        .soft(report.outcomes)
        .toEqual([
          'memory waiter: LockerClosedError',
          'memory withLock: LockLostError locker-closed',
          'redis waiter 0: LockerClosedError',
          'redis waiter 1: LockerClosedError',
          'redis waiter 2: LockerClosedError',
          'redis withLock (notify): LockLostError locker-closed',
        ]);
      expect.soft(report.releaseAnswers).toEqual([false, false]);
      expect.soft(report.closeMs).toBeLessThan(1_000);
    } finally {
      killIfRunning(child);
    }
  });
});
