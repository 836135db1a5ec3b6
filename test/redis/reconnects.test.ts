/**
 * Reconnects and frozen servers (issue #10): after the subscriber connection drops (`CLIENT KILL
 * TYPE pubsub`, or a Redis killed and restarted), wake-ups resume within a second and the store
 * does not fall back to polling for good: round trips per acquisition (counted on the clients,
 * and as INFO commandstats calls) and throughput on a hot key return to their figures from before
 * the drop (judged against a control pair on a second server that is never dropped, measured over
 * the same windows, so that the machine's load does not count), and a single hand-off after the
 * drop is signalled (well under the ~placeTtl/4 a waiter in line sleeps when it counts on signals,
 * and under the polling control). And with Redis frozen
 * (SIGSTOP) and acquisitions retrying, failed acquisitions leave no timer behind; once Redis is
 * back and everything is closed, the process exits by itself (a child process, see
 * test/fixtures/frozenRetrier.ts).
 *
 * RECONNECTS_VERBOSE=1 prints the measured figures.
 */
import { fileURLToPath } from 'node:url';
import { Redis as IORedis, type Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type AcquireOptions, type Locker } from '../../src/index.js';
import { RedisLockStore, RedlockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { countingClient, type CountingClient } from '../../support/countingClient.js';
import type { FrozenRetrierSettings, RetrierReport, RetrierSample } from '../fixtures/frozenRetrier.js';
import { exitOf, forkFixture, killIfRunning, messagesOf, within, CHILD_READY_MS } from '../support/children.js';
import { cutProxy } from '../support/cutProxy.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const frozenRetrier = fileURLToPath(new URL('../fixtures/frozenRetrier.ts', import.meta.url));

const suite = redisSuite({ flush: false, unhandled: 'afterEach' });
/** A second server, never dropped: a control pair runs on it during the same windows. */
const controlSuite = redisSuite({ flush: false, unhandled: 'off' });

const report = (what: string, figures: unknown) => {
  if (process.env.RECONNECTS_VERBOSE) console.log(what, JSON.stringify(figures));
};

/** One "process": its own counted connection, store and locker. */
interface Contender {
  readonly locker: Locker;
  readonly counting: CountingClient<Redis>;
  acquisitions: number;
}

function contender(storeOptions: RedisLockStoreOptions = {}, on: EmbeddedRedis = suite.server): Contender {
  const client = connect(on);
  const counting = countingClient(client);
  const store = new RedisLockStore(counting.client, storeOptions);
  const locker = createLocker({ store, commandTimeout: 500 });
  const c: Contender = { locker, counting, acquisitions: 0 };
  locker.events$.subscribe((e) => {
    if (e.type === 'acquired') c.acquisitions++;
  });
  suite.closers.push(() => {
    store.close();
    client.disconnect();
  });
  return c;
}

/** Script calls and transactions a server ran (each one round trip), from INFO commandstats. */
async function serverCalls(node: Redis): Promise<number> {
  const stats = await node.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(evalsha|eval|exec):calls=(\d+)/gm)) calls += Number(match[2]);
  return calls;
}

/** The pub/sub connections on the server, by client id. */
async function pubsubClients(): Promise<string[]> {
  const list = String(await suite.admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
  return [...list.matchAll(/^id=(\d+)/gm)].map((m) => m[1]!).sort();
}

/** Two contenders, each running `loops` loops that take `key` and hold it 1 ms, until stopped. */
function hotKey(contenders: Contender[], key: string, loops: number) {
  let stopped = false;
  let errors = 0;
  const loop = async (c: Contender) => {
    while (!stopped) {
      try {
        await lastValueFrom(c.locker.using(key, () => timer(1)));
      } catch {
        errors++; // while the server is down
        await sleep(10);
      }
    }
  };
  const running = Promise.all(contenders.flatMap((c) => Array.from({ length: loops }, () => loop(c))));
  return {
    get errors() {
      return errors;
    },
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

interface Window {
  acquisitions: number;
  perSecond: number;
  /** Round trips per acquisition, counted on the clients. */
  roundTrips: number;
  /** Script calls and transactions per acquisition, counted by the server. */
  serverCalls: number;
}

/** A pair of contenders on one server, with the connection that reads its counters. */
interface Pair {
  readonly contenders: Contender[];
  readonly node: Redis;
}

/** Measures `ms` of the hot key on each pair, over the same window. */
async function measure(pairs: Pair[], ms: number): Promise<Window[]> {
  const acq = (p: Pair) => p.contenders.reduce((n, c) => n + c.acquisitions, 0);
  const rts = (p: Pair) => p.contenders.reduce((n, c) => n + c.counting.roundTrips, 0);
  const snapshot = () => Promise.all(pairs.map(async (p) => ({ a: acq(p), r: rts(p), s: await serverCalls(p.node), t: performance.now() })));
  const start = await snapshot();
  await sleep(ms);
  const end = await snapshot();
  return pairs.map((_, i) => {
    const [s0, s1] = [start[i]!, end[i]!];
    const acquisitions = s1.a - s0.a;
    return {
      acquisitions,
      perSecond: Math.round((acquisitions * 1000) / (s1.t - s0.t)),
      roundTrips: Number(((s1.r - s0.r) / Math.max(1, acquisitions)).toFixed(3)),
      serverCalls: Number(((s1.s - s0.s) / Math.max(1, acquisitions)).toFixed(3)),
    };
  });
}

interface HandOff {
  /** From the holder's release to the waiter's grant. */
  ms: number;
  /** Round trips the waiter made while it waited in line, before the release. */
  waitRoundTrips: number;
}

/**
 * One hand-off from `holder` to `waiter` on a fresh key: the waiter queues and waits in line for
 * `waitMs`, then the holder releases. A waiter that counts on signals makes (almost) no round
 * trip while it waits (it refreshes its place every ~placeTtl/4, 750–1000 ms) and is handed the
 * key at once; one that polls asks every back-off step (10–30 ms by default), and one that counts
 * on signals that never come is handed the key only when its sleep ends.
 */
async function handOff(holder: Contender, waiter: Contender, key: string, waiterOptions: AcquireOptions = {}, waitMs = 600): Promise<HandOff> {
  const held = await firstValueFrom(holder.locker.acquire(key));
  let grantedAt = 0;
  const waiting = firstValueFrom(waiter.locker.acquire(key, { waitTimeout: 10_000, ...waiterOptions })).then((lease) => {
    grantedAt = performance.now();
    return lease;
  });
  await eventually(async () => (await suite.admin.zcard(`rxjs-lock:line:{lock:${key}}`)) === 1, 3_000);
  const queued = waiter.counting.roundTrips;
  await sleep(waitMs);
  const waitRoundTrips = waiter.counting.roundTrips - queued;
  const releasedAt = performance.now();
  await held.release();
  const lease = await waiting;
  await lease.release();
  return { ms: Number((grantedAt - releasedAt).toFixed(2)), waitRoundTrips };
}

/**
 * Figures after the drop must be within these factors of the figures before it — beyond what the
 * control pair (same process, same windows, a server never dropped) saw change meanwhile: the
 * machine's load moves both pairs alike (other test files run beside this one).
 */
const MAX_ROUND_TRIP_RATIO = 1.5;
const MIN_THROUGHPUT_RATIO = 0.5;

describe('wake-ups after the subscriber connection drops', () => {
  it('controls: a polling waiter asks every back-off step and is handed the key a step late; a signalled one waits quietly and gets it at once', async () => {
    const a = contender();
    const polling = contender({ wakeUp: false });
    const signalled = contender();
    const pollingDefault = await handOff(a, polling, 'control-polling');
    const pollingSlow = await handOff(a, polling, 'control-polling-slow', { retry: { minDelay: 1_000, jitter: 0 } }, 100);
    const signalledDefault = await handOff(a, signalled, 'control-signalled');
    report('control hand-offs', { pollingDefault, pollingSlow, signalledDefault });
    expect(pollingDefault.waitRoundTrips).toBeGreaterThan(10); // every 10–30 ms for 600 ms
    expect(pollingSlow.ms).toBeGreaterThan(500); // the rest of its 1 s step
    expect(signalledDefault.waitRoundTrips).toBeLessThanOrEqual(2);
    expect(signalledDefault.ms).toBeLessThan(100);
  });

  for (const drop of ['CLIENT KILL TYPE pubsub', 'Redis killed and restarted'] as const) {
    it(`${drop}: wake-ups resume within a second; round trips per acquisition, throughput and hand-off latency return to their figures from before`, async () => {
      const a = contender();
      const b = contender();
      const pair: Pair = { contenders: [a, b], node: suite.admin };
      const control: Pair = { contenders: [contender({}, controlSuite.server), contender({}, controlSuite.server)], node: controlSuite.admin };
      const run = hotKey([a, b], 'hot', 4);
      const controlRun = hotKey(control.contenders, 'hot', 4);
      try {
        await sleep(300); // warm-up: both stores have subscribed, the line has formed
        const [before, controlBefore] = (await measure([pair, control], 1_500)) as [Window, Window];
        const subscribersBefore = await pubsubClients();
        expect(subscribersBefore).toHaveLength(2);

        const droppedAt = performance.now();
        if (drop === 'CLIENT KILL TYPE pubsub') {
          expect(Number(await suite.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBe(2);
        } else {
          await suite.server.kill();
          await sleep(100);
          await suite.server.restart();
          await eventually(async () => (await suite.admin.ping().catch(() => 'down')) === 'PONG', 5_000);
        }
        // both inboxes are subscribed again, on new connections, within a second
        await eventually(async () => {
          const ids = await pubsubClients();
          return ids.length === 2 && ids.every((id) => !subscribersBefore.includes(id));
        }, 3_000);
        const resubscribedMs = performance.now() - droppedAt;
        const [rightAfter] = await measure([pair], Math.max(0, 1_000 - (performance.now() - droppedAt)));
        const [after, controlAfter] = (await measure([pair, control], 1_500)) as [Window, Window];
        await Promise.all([run.stop(), controlRun.stop()]);
        // a single hand-off across the two stores, on the recovered connections (well within the
        // inboxes' 2 s linger, so they are the same subscriptions)
        const single = await handOff(a, b, 'single');
        // and one with a waiter whose back-off is a 1 s step: only a signal hands it the key early
        const slowStep = await handOff(b, a, 'single-slow', { retry: { minDelay: 1_000, jitter: 0 } }, 100);
        const figures = {
          before,
          rightAfter,
          after,
          controlBefore,
          controlAfter,
          resubscribedMs: Math.round(resubscribedMs),
          single,
          slowStep,
          errors: run.errors,
        };
        report(drop, figures);
        const said = JSON.stringify(figures);

        expect(resubscribedMs).toBeLessThan(1_000 + (drop === 'CLIENT KILL TYPE pubsub' ? 0 : 1_000)); // a restart takes a while itself
        expect(before.acquisitions).toBeGreaterThan(100);
        // how much the load alone moved the figures (never counted as an improvement)
        const controlRoundTrips = Math.max(1, controlAfter.roundTrips / Math.max(0.001, controlBefore.roundTrips));
        const controlThroughput = Math.min(1, controlAfter.perSecond / Math.max(1, controlBefore.perSecond));
        expect(after.roundTrips, said).toBeLessThanOrEqual(before.roundTrips * MAX_ROUND_TRIP_RATIO * controlRoundTrips + 0.05);
        // (a restarted server's counters start from zero, but each window reads them on one server)
        expect(after.serverCalls, said).toBeLessThanOrEqual(before.serverCalls * MAX_ROUND_TRIP_RATIO * controlRoundTrips + 0.05);
        expect(after.perSecond, said).toBeGreaterThanOrEqual(before.perSecond * MIN_THROUGHPUT_RATIO * controlThroughput);
        // signalled again: quiet in line, handed the key at once
        expect(single.waitRoundTrips, said).toBeLessThanOrEqual(2);
        expect(single.ms, said).toBeLessThan(100);
        expect(slowStep.ms, said).toBeLessThan(100);
      } finally {
        await Promise.all([run.stop(), controlRun.stop()]);
      }
    });
  }
});

describe('a frozen Redis (SIGSTOP) while acquisitions retry', () => {
  it('failed acquisitions leave no timer behind; once Redis is back and everything is closed, the process exits by itself', async () => {
    const child = forkFixture(frozenRetrier, 'FROZEN_RETRIER', { port: suite.server.port } satisfies FrozenRetrierSettings);
    const exited = exitOf(child, 40_000);
    let paused = false;
    try {
      const message = messagesOf(child);
      await within(message('ready'), CHILD_READY_MS, "'ready' from the retrier");
      child.send('go');
      await within(message('looping'), 10_000, "'looping' from the retrier");
      const sample = async () => {
        child.send('sample');
        return within(message<RetrierSample>('sample'), 5_000, 'a sample from the retrier');
      };
      const running = await sample();
      suite.server.pause();
      paused = true;
      await sleep(400);
      const frozen1 = await sample();
      await sleep(1_000);
      const frozen2 = await sample();
      suite.server.resume();
      paused = false;
      await sleep(500);
      const thawed = await sample();
      child.send('finish');
      const final = await within(message<RetrierReport>('report'), 10_000, 'report from the retrier');
      const reportedAt = performance.now();
      const exit = await Promise.race([exited, exitOf(child, 5_000)]);
      const exitMs = performance.now() - reportedAt;
      report('frozen retrier', { running, frozen1, frozen2, thawed, final, exit, exitMs: Math.round(exitMs) });

      const storeErrors = (s: { outcomes: Record<string, number> }) => s.outcomes.LockStoreError ?? 0;
      // the loops were running into the frozen server all along: many failed acquisitions…
      expect(storeErrors(frozen2) - storeErrors(frozen1)).toBeGreaterThan(20);
      expect(running.outcomes.LockTimeoutError ?? 0).toBeGreaterThan(0);
      // …and no timer more for them (a few come and go: the loops' own, the sessions' sleeps)
      const timers = `live timers (ref'd) running ${running.liveTimers} (${running.refTimers}), frozen ${frozen1.liveTimers} (${frozen1.refTimers}) then ${frozen2.liveTimers} (${frozen2.refTimers}), thawed ${thawed.liveTimers} (${thawed.refTimers})`;
      expect(frozen2.liveTimers, timers).toBeLessThanOrEqual(frozen1.liveTimers + 3);
      expect(frozen2.refTimers, timers).toBeLessThanOrEqual(frozen1.refTimers + 3);
      expect(frozen2.activeHandles).toBeLessThanOrEqual(frozen1.activeHandles);
      expect(thawed.liveTimers, timers).toBeLessThanOrEqual(running.liveTimers + 3);
      expect(Object.keys(final.outcomes).filter((k) => k.startsWith('other'))).toEqual([]);
      expect(final.unhandled).toEqual([]);
      // closed: no timer keeps it alive, nothing but the IPC channel is open, and it exits by itself
      expect(final.refTimers).toBe(0);
      expect(final.activeResources.filter((r) => r !== 'PipeWrap')).toEqual([]);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(exitMs).toBeLessThan(5_000);
      await eventually(async () => (await suite.admin.keys('*')).filter((k) => !k.startsWith('rxjs-lock:fence:')).length === 0, 3_000);
    } finally {
      if (paused) suite.server.resume();
      killIfRunning(child);
    }
  });
});

describe("the store's own subscriber connection", () => {
  // ioredis re-subscribes a subscriber that comes back by itself, dropping the promise of that
  // SUBSCRIBE: a connection closed before Redis answers it (the store closed, a frozen Redis)
  // leaves an unhandled rejection, which ends a Node process by default — seen once in several
  // runs of attackFuzz.test.ts under load. The inbox subscribes again itself (with the rejection
  // handled; the tests above show wake-ups coming back), so the connection the store makes has
  // ioredis' re-subscription off. (A subscriber you pass in is yours: set it off there too.)
  it.each([
    ['RedisLockStore', (client: Redis) => new RedisLockStore(client)],
    // the quorum store's hint inbox on its one node
    ['RedlockStore', (client: Redis) => new RedlockStore([client])],
  ])('%s closes without an unhandled rejection while its re-subscription after a reconnect waits for an answer', async (_name, storeOf) => {
    const proxy = await cutProxy(suite.server.port);
    suite.closers.push(() => proxy.close());
    const client = new IORedis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: null, retryStrategy: () => 20 });
    client.on('error', () => undefined);
    const store = storeOf(client);
    // (closed again after the test if it fails before closing them itself: both are idempotent)
    suite.closers.push(() => {
      store.close();
      client.disconnect();
    });
    const watch = store.watch!('k', 't', () => undefined);
    await watch.ready;
    // the link drops; the subscriber comes back, and its SUBSCRIBE never reaches Redis
    const lost = proxy.loseNext('subscribe');
    proxy.cutAll();
    await lost;
    // closed while that SUBSCRIBE waits: ioredis rejects it ("Connection is closed.")
    watch.stop();
    store.close();
    client.disconnect();
    // (an unhandled rejection is reported on a later turn of the event loop; the suite fails the test on one)
    await sleep(200);
  });

  it('is made with ioredis autoResubscribe off', async () => {
    const client = connect(suite.server);
    const store = new RedisLockStore(client);
    const watch = store.watch!('k', 't', () => undefined);
    await watch.ready;
    const subscriber = (store as unknown as { wake: { subscriber: Redis } }).wake.subscriber;
    expect(subscriber.options.autoResubscribe).toBe(false);
    expect(client.options.autoResubscribe).toBe(true);
    watch.stop();
    store.close();
    client.disconnect();
  });
});
