/**
 * Attack: the late-signal check (a grant signal dated no later than the last "queued" answer is
 * checked with the store) relies on the release script putting the server clock in the signal.
 * A signal without it is still trusted as fresh. Two versions of this library may share one Redis
 * (the scripts are registered by SHA for that reason), as they do during a rolling upgrade: a
 * process still on the previous version (0.1.0 as of bc76989, whose release script is below,
 * comments stripped) hands the key over with the old message, `granted <token> <fence> <waiting>
 * <fences>`, and a waiter on this version that receives it late takes it for a fresh grant.
 *
 * Same set-up as attackWakeSignals.test.ts (B's subscriber link delays 1050 ms; B's ttl 300 and
 * place TTL 3000; C behind B takes the lapsed grant; B's next refresh is answered "queued"; then
 * B's signal arrives), except that A's release is the previous version's script.
 * Promise: never two holders.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { Redis, type Redis as RedisClient } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLocker, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { keysOf, lineOf } from '../support/handoffHarness.js';
import { connect, EmbeddedRedis } from '../support/redis.js';
import { eventually, sleep } from '../support/timing.js';

/** A TCP proxy to Redis that delays everything Redis sends by `delayMs`, in order. */
interface DelayProxy {
  readonly port: number;
  close(): Promise<void>;
}

async function delayProxy(targetPort: number, delayMs: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pump = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.at <= now) {
        const { chunk } = queue.shift()!;
        if (!client.destroyed) client.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, Math.max(0, queue[0]!.at - now));
    };
    upstream.on('data', (chunk: Buffer) => {
      queue.push({ at: performance.now() + delayMs, chunk });
      if (timer === undefined) timer = setTimeout(pump, delayMs);
    });
    const end = () => {
      if (timer !== undefined) clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** B's place lasts 3 s: refreshed every 750-1000 ms while woken by signals. */
const B_PLACE_TTL = 3000;
/** B's ttl: a key handed to B lapses 300 ms after the hand-off unless B claims it. */
const B_TTL = 300;
/** C refreshes its place every 75-100 ms, so it takes a lapsed grant at once. */
const C_PLACE_TTL = 300;
/** What B's subscriber link adds: B's next refresh (750-1000 ms after the release) comes before its signal. */
const SIGNAL_DELAY = 1050;

/** The release script of the previous version (bc76989), comments stripped. */
const PREVIOUS_RELEASE = `
local function int(n)
  return string.format('%.0f', n)
end
local function serverClock()
  local t = redis.call('TIME')
  local sec, usec = tonumber(t[1]), tonumber(t[2])
  return sec * 1000 + math.floor(usec / 1000), (sec - 1735689600) * 4000000 + usec * 4
end
local function issueFences(fenceKey, n, seed)
  local base = tonumber(redis.call('GET', fenceKey) or '0')
  if seed > base then
    base = seed
  end
  local count = math.min(n, seed + n - base)
  if count < 1 then
    count = 1
  end
  local last = base + count
  redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
  return base + 1, count
end
local function firstLive(line, places, now)
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then
      return nil
    end
    local place = redis.call('HGET', places, 'w:' .. first)
    if place then
      local lapseAt, ttl, fences, placeTtl, inbox = string.match(place, '^(%d+) (%d+) (%d+) (%d+) (.*)$')
      lapseAt = tonumber(lapseAt)
      if lapseAt and lapseAt > now then
        return first, tonumber(ttl), tonumber(fences), inbox, lapseAt, tonumber(placeTtl)
      end
    end
    redis.call('ZREM', line, first)
    redis.call('HDEL', places, 'w:' .. first)
  end
end
local function leaveLine(line, places, token)
  redis.call('ZREM', line, token)
  redis.call('HDEL', places, 'w:' .. token)
end
local function grantOf(places, token)
  local grant = redis.call('HGET', places, 'grant')
  if grant then
    local grantee, fence, fences = string.match(grant, '^(.*) (%d+) (%d+)$')
    if grantee == token then
      return tonumber(fence), tonumber(fences)
    end
  end
  return nil
end
local lock, fenceKey, line, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token = ARGV[1]
if redis.call('GET', lock) ~= token then
  return 0
end
if redis.call('EXISTS', line) == 0 then
  redis.call('DEL', lock, places)
  return 1
end
local now, seed = serverClock()
local nextToken, nextTtl, nextFences, inbox, lapseAt = firstLive(line, places, now)
if nextToken then
  leaveLine(line, places, nextToken)
  local grantTtl = math.max(1, math.min(lapseAt - now, nextTtl))
  redis.call('SET', lock, nextToken, 'PX', int(grantTtl))
  local fence, count = issueFences(fenceKey, nextFences, seed)
  redis.call('HSET', places, 'grant', nextToken .. ' ' .. int(fence) .. ' ' .. int(count))
  if redis.call('PTTL', places) < grantTtl then
    redis.call('PEXPIRE', places, int(grantTtl))
  end
  local waiting = redis.call('ZCARD', line)
  if inbox ~= '' then
    redis.call('PUBLISH', inbox, 'granted ' .. nextToken .. ' ' .. int(fence) .. ' ' .. int(waiting) .. ' ' .. int(count))
  end
  local behind, _, _, behindInbox, behindLapse, behindPlaceTtl = firstLive(line, places, now)
  if behind and behindInbox ~= '' and now + grantTtl < behindLapse - behindPlaceTtl * 2 / 3 then
    redis.call('PUBLISH', behindInbox, 'behind ' .. behind .. ' ' .. int(grantTtl))
  end
  return 2
end
redis.call('DEL', lock)
redis.call('HDEL', places, 'grant')
return 1
`;

let server: EmbeddedRedis;
let admin: RedisClient;
let closers: Array<() => unknown> = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await EmbeddedRedis.start();
  admin = connect(server);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  admin?.disconnect();
  await server?.stop();
  expect(unhandled).toEqual([]);
});
beforeEach(async () => {
  closers = [];
  await admin.flushall();
});
afterEach(async () => {
  for (const close of closers.reverse()) await close();
});

function newLocker(storeOptions: RedisLockStoreOptions, ttl: number): Locker {
  const client = connect(server);
  const store = new RedisLockStore(client, storeOptions);
  const locker = createLocker({ store, ttl, waitTimeout: 20_000 });
  closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

describe('attack: a late grant signal from a process on the previous version (rolling upgrade)', () => {
  it('a waiter never takes a lapsed grant for its own while another process holds the key', async () => {
    const proxy = await delayProxy(server.port, SIGNAL_DELAY);
    closers.push(() => proxy.close());
    const overlaps: Array<{ round: number; bFence: number; cFence: number; redisHolder: string | null; bToken: string; cToken: string }> = [];
    let staleWins = 0;

    for (let round = 0; round < 2 && overlaps.length === 0; round++) {
      const key = `stale-${round}`;
      const subscriber = new Redis({ host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 2, retryStrategy: () => 50 });
      subscriber.on('error', () => undefined);
      await subscriber.ping(); // connected (through the slow link)
      closers.push(() => subscriber.disconnect());

      const lockerA = newLocker({}, 10_000);
      const lockerB = newLocker({ placeTtl: B_PLACE_TTL, subscriber }, B_TTL);
      const lockerC = newLocker({ placeTtl: C_PLACE_TTL }, 10_000);

      const a = await firstValueFrom(lockerA.acquire(key));
      let bLease: Lease | undefined;
      let cAtB: boolean | undefined;
      let bHeldAtB = false;
      let holderAtB: string | null = null;
      let cLease: Lease | undefined;
      const bDone = firstValueFrom(lockerB.acquire(key)).then(async (lease) => {
        bLease = lease;
        cAtB = cLease?.held; // at the very moment B got its lease
        bHeldAtB = lease.held;
        holderAtB = await admin.get(`lock:${key}`);
      });
      // B: queued, its inbox subscribed through the slow link, refreshing its place slowly.
      await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 1, 3000);
      await sleep(SIGNAL_DELAY * 2 + 200);
      const cDone = firstValueFrom(lockerC.acquire(key)).then((lease) => {
        cLease = lease;
      });
      await eventually(async () => (await lineOf(admin, `lock:${key}`)).length === 2, 3000);
      // Release just after B refreshed its place (its next refresh is 750-1000 ms away).
      const bToken = (await lineOf(admin, `lock:${key}`))[0]!.token;
      const placeKey = keysOf(`lock:${key}`).places;
      const before = await admin.hget(placeKey, `w:${bToken}`);
      await eventually(async () => (await admin.hget(placeKey, `w:${bToken}`)) !== before, 3000, 1);

      // A's release, by the previous version's script, hands the key to B; B's signal is
      // SIGNAL_DELAY ms away.
      const k = keysOf(`lock:${key}`);
      expect(await admin.eval(PREVIOUS_RELEASE, 4, k.lock, k.fence, k.line, k.places, a.token)).toBe(2);
      await Promise.race([cDone, sleep(2000)]);
      expect(cLease?.held).toBe(true);
      await Promise.race([bDone, sleep(SIGNAL_DELAY + 500)]);
      if (bLease !== undefined) {
        staleWins++;
        if (cAtB === true && bHeldAtB) {
          overlaps.push({ round, bFence: bLease.fence, cFence: cLease!.fence, redisHolder: holderAtB, bToken: bLease.token, cToken: cLease!.token });
        }
      }
      await cLease?.release();
      await bDone.catch(() => undefined);
      await bLease?.release();
    }
    // Never two holders: B may only get the key after C gave it back.
    expect({ overlaps, staleWins }).toEqual({ overlaps: [], staleWins: 0 });
  });
});
