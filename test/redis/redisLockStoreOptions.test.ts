/**
 * The Redis store's own options, checked when the store is made (each refusal a LockOptionsError
 * naming the option; each bound accepted), and their defaults as Redis sees them: a place in line
 * lasts 3 s (`placeTtl`), and the inbox stays subscribed for a while after its last waiter left
 * (`lingerMs`, 2 s), so waits close together subscribe once.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isLockOptionsError } from '../../src/index.js';
import { MAX_MS } from '../../src/options/limits.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { suiteStore } from '../support/suiteLocker.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** A client of the suite's server (with `keyPrefix`, if given) that never connects, closed after the test. */
function lazyClient(keyPrefix?: string): Redis {
  const client = connect(suite.server, { lazyConnect: true, ...(keyPrefix === undefined ? {} : { keyPrefix }) });
  suite.closers.push(() => client.disconnect());
  return client;
}

/** The option a LockOptionsError thrown by `make` names, or 'accepted' (the store made is closed). */
function optionRefused(make: () => RedisLockStore): string {
  let store: RedisLockStore;
  try {
    store = make();
  } catch (error) {
    if (!isLockOptionsError(error)) throw error;
    return error.option;
  }
  store.close();
  return 'accepted';
}

/** Calls of `command` on the suite's server since the last CONFIG RESETSTAT. */
async function calls(command: string): Promise<number> {
  const info = await suite.admin.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

describe('RedisLockStore options, checked when the store is made', () => {
  it('refuses a client without multi() or pipeline() (what leave and renewals need)', () => {
    const noop = () => undefined;
    for (const fake of [
      { defineCommand: noop, pipeline: noop },
      { defineCommand: noop, multi: noop },
      { defineCommand: noop, multi: noop, pipeline: 1 },
    ]) {
      expect(
        optionRefused(() => new RedisLockStore(fake as never)),
        Object.keys(fake).join(),
      ).toBe('client');
    }
  });

  it('placeTtl: an integer from 100 to MAX_MS; lingerMs: an integer from 0 to MAX_MS; wakeUp: a boolean', () => {
    const client = lazyClient();
    const cases: Array<[RedisLockStoreOptions, string]> = [
      [{ placeTtl: 99 }, 'placeTtl'],
      [{ placeTtl: 100.5 }, 'placeTtl'],
      [{ placeTtl: MAX_MS + 1 }, 'placeTtl'],
      [{ placeTtl: 100 }, 'accepted'],
      [{ placeTtl: MAX_MS }, 'accepted'],
      [{ lingerMs: -1 }, 'lingerMs'],
      [{ lingerMs: 0.5 }, 'lingerMs'],
      [{ lingerMs: MAX_MS + 1 }, 'lingerMs'],
      [{ lingerMs: 0 }, 'accepted'],
      [{ lingerMs: MAX_MS }, 'accepted'],
      [{ wakeUp: 'yes' as unknown as boolean }, 'wakeUp'],
      [{ wakeUp: 1 as unknown as boolean }, 'wakeUp'],
      [{ wakeUp: false }, 'accepted'],
    ];
    for (const [options, outcome] of cases)
      expect(
        optionRefused(() => new RedisLockStore(client, options)),
        JSON.stringify(options),
      ).toBe(outcome);
  });

  it('subscriber: a connection with subscribe() and on()', () => {
    const client = lazyClient();
    const noop = () => undefined;
    for (const subscriber of [null, 5, {}, { subscribe: noop }, { on: noop }, { subscribe: 1, on: noop }]) {
      expect(
        optionRefused(() => new RedisLockStore(client, { subscriber: subscriber as never })),
        JSON.stringify(subscriber),
      ).toBe('subscriber');
    }
    expect(optionRefused(() => new RedisLockStore(client, { subscriber: lazyClient() }))).toBe('accepted');
  });

  it("the client's keyPrefix: no lone '{' or '}', a complete hash tag allowed, never the store's namespace", () => {
    const cases: Array<[string, string]> = [
      ['app{', 'client keyPrefix'],
      ['app}', 'client keyPrefix'],
      ['}app{', 'client keyPrefix'],
      ['{app}:', 'accepted'],
      ['app:', 'accepted'],
      ['rxjs-lock:', 'client keyPrefix'],
      ['my:rxjs-lock:', 'client keyPrefix'],
    ];
    for (const [keyPrefix, outcome] of cases)
      expect(
        optionRefused(() => new RedisLockStore(lazyClient(keyPrefix))),
        keyPrefix,
      ).toBe(outcome);
    const numeric = lazyClient();
    (numeric.options as { keyPrefix: unknown }).keyPrefix = 7;
    expect(optionRefused(() => new RedisLockStore(numeric))).toBe('client keyPrefix');
  });
});

describe('a subscriber passed in', () => {
  it('is used for wake-ups and never closed by the store: not after its last waiter left, nor by close()', async () => {
    const client = connect(suite.server);
    const subscriber = connect(suite.server);
    suite.closers.push(
      () => client.disconnect(),
      () => subscriber.disconnect(),
    );
    const store = new RedisLockStore(client, { subscriber, lingerMs: 0 });
    const watch = store.watch!('k', 'a', () => undefined);
    await watch.ready;
    expect(((await suite.admin.call('PUBSUB', 'CHANNELS', 'rxjs-lock:inbox:*')) as string[]).length).toBe(1);
    watch.stop();
    // (lingerMs 0: the inbox is unsubscribed at once, the connection kept)
    await eventually(async () => ((await suite.admin.call('PUBSUB', 'CHANNELS', 'rxjs-lock:inbox:*')) as string[]).length === 0, 20_000, 20);
    store.close();
    await sleep(100);
    expect(subscriber.status).toBe('ready');
    expect(await subscriber.ping()).toBe('PONG');
  });
});

describe('RedisLockStore option defaults', () => {
  it('placeTtl: a place in line lasts 3 s', async () => {
    const store = suiteStore(suite, { wakeUp: false });
    expect(await store.tryAcquire('k', 'holder', 60_000)).toMatchObject({ acquired: true });
    const queued = await store.tryAcquireInLine('k', 'waiter', 60_000, 1, 'keep');
    expect(queued).toMatchObject({ acquired: false, queued: true, placeTtl: 3000 });
    // the place records its lapse time (server clock, ms) placeTtl after the call
    const [lapseAt] = (await suite.admin.hget(helperKey('k', 'places'), 'w:waiter'))!.split(' ');
    const [seconds, micros] = await suite.admin.time();
    const left = Number(lapseAt) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    expect(left).toBeGreaterThan(1000);
    expect(left).toBeLessThanOrEqual(3000);
  });

  it('lingerMs: the inbox stays subscribed after its last waiter left, so a wait soon after subscribes no more; later it is given up', async () => {
    const store = suiteStore(suite);
    const watchOnce = async (token: string) => {
      const watch = store.watch!('k', token, () => undefined);
      await watch.ready;
      watch.stop();
    };
    await watchOnce('a');
    await sleep(200); // well within the default 2 s
    await suite.admin.config('RESETSTAT');
    await watchOnce('b');
    expect(await calls('subscribe')).toBe(0);
    // and once it has lingered, the store's subscriber connection is closed
    await eventually(async () => ((await suite.admin.call('PUBSUB', 'CHANNELS', 'rxjs-lock:inbox:*')) as string[]).length === 0, 20_000, 50);
  });
});
