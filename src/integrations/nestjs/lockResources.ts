/**
 * What `LockModule` opens from its options (the locker, and the store and Redis connection when
 * it makes them), and closes on application shutdown: only what it made, never what it was given.
 */
import { Logger } from '@nestjs/common';
import { createLocker } from '../../api/createLocker.js';
import { RedisLockStore } from '../../backends/redis/RedisLockStore.js';
import type { RedisClient } from '../../backends/redis/RedisClient.js';
import type { Locker } from '../../engine/Locker.js';
import { LockOptionsError } from '../../errors/errors.js';
import type { LockStore } from '../../store/LockStore.js';
import { checkErrorOptions, type LockErrorOptions } from './lockErrorResponses.js';
import type { LockModuleOptions } from './LockModuleOptions.js';

/** What the interceptor needs from the module. */
export interface LockSettings {
  readonly locker: Locker;
  readonly errors: LockErrorOptions;
}

/** The module's locker, plus what it must close on shutdown. */
export interface LockResources extends LockSettings {
  /** Closes the locker, then the store and the connection the module made. Never rejects. */
  close(): Promise<void>;
}

const OPTION_NAMES = ['store', 'client', 'redis', 'redisStore', 'locker', 'errors'];

/** Opens what `options` describe. Throws `LockOptionsError` (naming the option) for bad input. */
export async function openLockResources(options: LockModuleOptions): Promise<LockResources> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('LockModule options', `an object of ${OPTION_NAMES.join(', ')}`, options);
  }
  const o = options as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    // forRoot passes its extras (isGlobal) along with the options.
    if (!OPTION_NAMES.includes(name) && name !== 'isGlobal') {
      throw new LockOptionsError(`LockModule options.${name}`, `one of ${OPTION_NAMES.join(', ')}`, o[name]);
    }
  }
  const sources = (['store', 'client', 'redis'] as const).filter((name) => options[name] !== undefined);
  if (sources.length !== 1) {
    throw new LockOptionsError(
      'LockModule options.store',
      'exactly one of store, client or redis (connection options or a URL)',
      sources.length === 0 ? undefined : sources.join(' and '),
    );
  }
  if (options.redisStore !== undefined && options.store !== undefined) {
    throw new LockOptionsError('LockModule options.redisStore', 'only with client or redis (the module makes no store when given one)', options.redisStore);
  }
  if (options.locker !== undefined && (typeof options.locker !== 'object' || options.locker === null || 'store' in options.locker)) {
    throw new LockOptionsError(
      'LockModule options.locker',
      'an object of createLocker options without store (give the store as options.store)',
      options.locker,
    );
  }
  const errors = checkErrorOptions(options.errors, 'LockModule options.errors');

  let created: ClosableClient | undefined;
  let client = options.client;
  if (options.redis !== undefined) {
    created = await connect(options.redis);
    client = created;
  }
  let store: LockStore | undefined;
  let locker: Locker;
  try {
    store = options.store ?? new RedisLockStore(client!, options.redisStore);
    locker = createLocker({ ...options.locker, store });
  } catch (error) {
    if (store !== options.store) await (store as RedisLockStore | undefined)?.close();
    created?.disconnect();
    throw error;
  }
  const madeStore = store === options.store ? undefined : (store as RedisLockStore);
  let closing: Promise<void> | undefined;
  return {
    locker,
    errors,
    close: () =>
      (closing ??= (async () => {
        await locker.close();
        try {
          await madeStore?.close();
        } catch {
          // a store that fails to close has nothing left to give back
        }
        if (created !== undefined) await closeClient(created);
      })()),
  };
}

/**
 * QUIT, or a plain disconnect when Redis does not answer it within 2 s (shutdown must not hang),
 * or at once when the connection is not up: ioredis queues a QUIT it cannot send until it
 * reconnects (which may be never), and its `disconnect()` leaves that QUIT unsettled.
 */
async function closeClient(client: ClosableClient): Promise<void> {
  if (client.status !== undefined && client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 2_000)));
  const quit = client.quit().then(
    () => true,
    () => false,
  );
  const done = await Promise.race([quit, late]);
  clearTimeout(timer);
  if (!done) client.disconnect();
}

/** The connection `LockModule` opens from `options.redis` (an ioredis client). */
type ClosableClient = RedisClient & { quit(): Promise<unknown>; disconnect(): void; readonly status?: string };

async function connect(redis: unknown): Promise<ClosableClient> {
  if (typeof redis !== 'string' && (typeof redis !== 'object' || redis === null || Array.isArray(redis))) {
    throw new LockOptionsError('LockModule options.redis', 'ioredis connection options or a redis:// URL', redis);
  }
  let ioredis: { Redis?: typeof import('ioredis').Redis; default?: typeof import('ioredis').Redis };
  try {
    ioredis = (await import('ioredis')) as unknown as typeof ioredis;
  } catch (cause) {
    throw new LockOptionsError(
      'LockModule options.redis',
      `connection options for ioredis, which is not installed (npm install ioredis): ${String(cause)}`,
      redis,
    );
  }
  const Redis = (ioredis.Redis ?? ioredis.default)!;
  const client = typeof redis === 'string' ? new Redis(redis) : new Redis(redis as import('ioredis').RedisOptions);
  // Without a listener ioredis reports connection errors as unhandled; the locker already turns
  // failed calls into LockStoreError, so one line in the log is enough.
  const logger = new Logger('LockModule');
  let last = '';
  client.on('error', (error: Error) => {
    if (error.message !== last) logger.warn(`Redis connection: ${error.message}`);
    last = error.message;
  });
  client.on('ready', () => (last = ''));
  return client as unknown as ClosableClient;
}
