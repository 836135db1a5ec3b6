/**
 * Issue #10, helper keys: no user key can name another lock's helper key, so any two distinct user
 * keys are two independent locks. Before the reserved namespace, `job{7}:fence` was both a legal
 * user key and the fence counter of `job{7}` (and `:line`, `:lapses` the line and its places):
 * taking one and then the other failed inside the acquire script after the SET, orphaning the lock
 * for its whole TTL, or took the line of a key that had a waiter.
 *
 * On a real Redis, for base keys with and without hash tags and for every variant a user could try
 * (the old helper suffixes, and the exact helper key names the store uses for the base, under each
 * locker prefix and ioredis client prefix): the variant and the base taken in either order are two
 * holders at once, both release `true`, and nothing is left behind; a waiter queued in Redis on one
 * is not disturbed by someone taking and releasing the other, and gets its key when its holder
 * releases. A key in the reserved namespace (with its prefix) is refused at once with
 * `LockOptionsError` (option `key`) and nothing reaches Redis.
 */
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey, RESERVED_PREFIX, type HelperKind } from '../../src/backends/redis/protocol/keyLayout.js';
import { countingClient } from '../../support/countingClient.js';
import { BASES, helperKeyVariants, processOn, type Process } from '../support/keyNamespace.js';
import { liveKeysOf } from '../support/lockKeys.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually } from '../support/timing.js';

/** The ioredis client prefixes the layout is computed for (besides the locker prefixes). */
const CLIENT_PREFIXES = ['', 'app:'];

interface Config {
  readonly name: string;
  /** The locker's keyPrefix (undefined: the default 'lock:'). */
  readonly keyPrefix: string | undefined;
  /** The ioredis client's own keyPrefix. */
  readonly clientPrefix: string;
}

const CONFIGS: Config[] = [
  { name: "keyPrefix ''", keyPrefix: '', clientPrefix: '' },
  { name: 'the default keyPrefix', keyPrefix: undefined, clientPrefix: '' },
  { name: "keyPrefix '' on a client with keyPrefix 'app:'", keyPrefix: '', clientPrefix: 'app:' },
];

const prefixOf = (config: Config) => config.keyPrefix ?? 'lock:';

/** Is `key`, under `config`, in the store's reserved namespace (so the locker must refuse it)? */
const isReserved = (config: Config, key: string) => (config.clientPrefix + prefixOf(config) + key).includes(RESERVED_PREFIX);

/**
 * `suite.admin` has no key prefix: it sees every key as Redis stores it. Each case starts from an
 * empty server (FLUSHALL), so one that fails leaves nothing to the next.
 */
const suite = redisSuite();

/** Every key a user could try to reach `base`'s helpers with: old suffixes and exact helper names. */
const variantsOf = (base: string) => helperKeyVariants(base, CLIENT_PREFIXES);
/** Keys still alive (with their TTL not passed). */
const liveKeys = () => liveKeysOf(suite.admin);

/** Calls per command the server has run so far, from INFO commandstats. */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await suite.admin.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** Commands a lock could have sent (everything but the observer's own and connection chatter). */
const IGNORED = new Set(['info', 'ping', 'client', 'subscribe', 'unsubscribe', 'dbsize', 'keys', 'select', 'hello', 'config', 'command']);
async function lockCommands(): Promise<number> {
  let total = 0;
  for (const [name, calls] of await commandCalls()) if (!IGNORED.has(name)) total += calls;
  return total;
}

/** One "process": its own connection, store and locker. */
function newProcess(config: Config): Process {
  const client = connect(suite.server, config.clientPrefix === '' ? {} : { keyPrefix: config.clientPrefix });
  return processOn(client, { ttl: 20_000, ...(config.keyPrefix === undefined ? {} : { keyPrefix: config.keyPrefix }) });
}

/** Takes `key` with a single attempt: it must be free. */
const take = (locker: Locker, key: string) => firstValueFrom(locker.acquire(key, { waitTimeout: 0 }));

describe.each(CONFIGS)('helper keys with $name', (config) => {
  const prefix = prefixOf(config);
  /** The key as Redis stores it (locker prefix, then the client's). */
  const stored = (key: string) => config.clientPrefix + prefix + key;
  /** A helper key of `key` as Redis stores it. */
  const storedHelper = (key: string, kind: HelperKind) => config.clientPrefix + helperKey(prefix + key, kind, config.clientPrefix);

  let p1: Process;
  let p2: Process;
  let p3: Process;
  beforeAll(() => {
    p1 = newProcess(config);
    p2 = newProcess(config);
    p3 = newProcess(config);
  });
  afterAll(async () => {
    await Promise.all([p1, p2, p3].map((p) => p?.close()));
  });

  const pairs = BASES.flatMap((base) =>
    variantsOf(base)
      .filter((variant) => !isReserved(config, variant))
      .map((variant) => ({ base, variant })),
  );

  /** Holds `first` then `second` (each in one attempt), both at once, then releases both. */
  async function bothAtOnce(first: string, second: string): Promise<void> {
    const a = await take(p1.locker, first);
    const b = await take(p2.locker, second);
    expect(a.held && b.held).toBe(true);
    expect(await suite.admin.get(stored(first))).toBe(a.token);
    expect(await suite.admin.get(stored(second))).toBe(b.token);
    expect(await Promise.all([a.release(), b.release()])).toEqual([true, true]);
    // Fence counters expire a few ms after their grant; nothing else may stay.
    await eventually(async () => (await liveKeys()).length === 0, 2000);
  }

  /**
   * p1 holds `held`; p3 waits for it in the Redis line; p2 takes and releases `other` meanwhile.
   * The line and the holder are untouched, and the waiter gets `held` when p1 releases it.
   */
  async function waiterUndisturbed(held: string, other: string): Promise<void> {
    const holder = await take(p1.locker, held);
    let settled = false;
    const waiting = firstValueFrom(p3.locker.acquire(held, { waitTimeout: 15_000 })).finally(() => (settled = true));
    const line = storedHelper(held, 'line');
    await eventually(async () => (await suite.admin.zcard(line)) === 1, 5000);

    const intruder = await take(p2.locker, other);
    expect(await suite.admin.get(stored(other))).toBe(intruder.token);
    expect(await suite.admin.zcard(line)).toBe(1);
    expect(await intruder.release()).toBe(true);

    expect(await suite.admin.get(stored(held))).toBe(holder.token);
    expect(await suite.admin.zcard(line)).toBe(1);
    expect(settled).toBe(false);

    expect(await holder.release()).toBe(true); // handed to the waiter in line
    const next: Lease = await waiting;
    expect(await suite.admin.get(stored(held))).toBe(next.token);
    expect(next.fence).toBeGreaterThan(holder.fence);
    expect(await next.release()).toBe(true);
    await eventually(async () => (await liveKeys()).length === 0, 2000);
  }

  it.each(pairs)('$variant and $base: taken in either order, two holders at once, nothing left', async ({ base, variant }) => {
    await bothAtOnce(variant, base);
    await bothAtOnce(base, variant);
  });

  it.each(pairs)('$variant and $base: a waiter in line for either is undisturbed by the other', async ({ base, variant }) => {
    await waiterUndisturbed(base, variant);
    await waiterUndisturbed(variant, base);
  });

  const reserved = BASES.flatMap((base) => variantsOf(base).filter((variant) => isReserved(config, variant)));
  if (reserved.length > 0) {
    it.each(reserved)('refuses %s (reserved namespace) at once, sending nothing to Redis', async (key) => {
      const counting = countingClient(connect(suite.server, config.clientPrefix === '' ? {} : { keyPrefix: config.clientPrefix }));
      const store = new RedisLockStore(counting.client, { lingerMs: 0 });
      const locker = createLocker({ store, ...(config.keyPrefix === undefined ? {} : { keyPrefix: config.keyPrefix }) });
      try {
        await eventually(async () => (await liveKeys()).length === 0, 2000); // the last test's fence counter
        const before = await lockCommands();
        for (const call of [() => locker.acquire(key), () => of(1).pipe(locker.withLock(key)), () => locker.using(key, () => of(1))]) {
          let error: unknown;
          try {
            call();
          } catch (e) {
            error = e;
          }
          expect(isLockOptionsError(error), String(error)).toBe(true);
          expect(error).toMatchObject({ option: 'key', received: prefixOf(config) + key });
        }
        expect(counting.roundTrips).toBe(0);
        expect(await lockCommands()).toBe(before);
        expect(await liveKeys()).toEqual([]);
        // the locker still works for the base key
        const values = await lastValueFrom(of('ok').pipe(locker.withLock('job{7}')));
        expect(values).toBe('ok');
      } finally {
        await locker.close();
        store.close();
        counting.client.disconnect();
      }
    });
  }
});

describe('the reserved namespace, reached through the locker prefix', () => {
  const cases = [
    { keyPrefix: 'rxjs-lock:', key: 'job7' },
    { keyPrefix: 'rxjs-lock:', key: 'anything{at}all' },
    { keyPrefix: 'rxjs-', key: 'lock:fence:{job7}' },
    { keyPrefix: 'rxjs-', key: 'lock:line:{7}:job{7}' },
    { keyPrefix: 'rxjs-lock', key: ':places:{job7}' },
    { keyPrefix: '', key: 'rxjs-lock:' },
    { keyPrefix: '', key: 'rxjs-lock:inbox:0' },
  ];
  it.each(cases)("keyPrefix '$keyPrefix' + '$key' is refused at once, sending nothing to Redis", async ({ keyPrefix, key }) => {
    const counting = countingClient(connect(suite.server));
    const store = new RedisLockStore(counting.client, { lingerMs: 0 });
    const locker = createLocker({ store, keyPrefix });
    try {
      const before = await lockCommands();
      let error: unknown;
      try {
        locker.acquire(key);
      } catch (e) {
        error = e;
      }
      expect(isLockOptionsError(error), String(error)).toBe(true);
      expect(error).toMatchObject({ option: 'key' });
      expect(counting.roundTrips).toBe(0);
      expect(await lockCommands()).toBe(before);
    } finally {
      await locker.close();
      store.close();
      counting.client.disconnect();
    }
  });
});
