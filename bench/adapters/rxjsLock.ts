/**
 * rxjs-lock as users get it: the package built from this repository's source into ../../dist
 * (`npm run bench` builds it first), so it runs as compiled JavaScript like the peers from
 * node_modules, not through the TypeScript loader. The only file of the bench that builds the
 * store and the locker: `createRxjsLock` below. A variant's `options` (../libraries.ts) are
 * spread into `createLocker`; its `storeOptions`, when it has any, are the store's second argument.
 */
import { Cluster } from 'ioredis';
import { firstValueFrom, Observable } from 'rxjs';
import type * as Core from '../../src/index.js';
import type { LockerOptions } from '../../src/index.js';
import type * as RedisEntry from '../../src/redis.js';

// Types from the source, code from the build (the same API).
const { createLocker, isLockTimeoutError } = (await import(new URL('../../dist/esm/index.js', import.meta.url).href)) as typeof Core;
const redisEntry = (await import(new URL('../../dist/esm/redis.js', import.meta.url).href)) as typeof RedisEntry;
const { RedisLockStore } = redisEntry;
type RedisLockStore = InstanceType<typeof RedisLockStore>;
type Store = LockerOptions['store'];
import { sharedKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { closeAll } from '../connections.js';
import { AcquireTimeout, type AdapterContext, type Held, type LockAdapter, type RedisConnection, type SharedTake } from './types.js';

/** The store's constructor with its optional second argument (options), which older versions do not declare. */
type StoreConstructor = new (client: Awaited<ReturnType<AdapterContext['connect']>>, options?: Readonly<Record<string, unknown>>) => RedisLockStore;

/** Same as the library's default (`DEFAULTS.keyPrefix`), unless a variant sets its own. */
const DEFAULT_KEY_PREFIX = 'lock:';

/** A version of the package without a quorum store: its quorum runs are skipped, not failed (see ../worker.ts). */
class NoQuorumStore extends Error {
  override readonly name = 'LockOptionsError';
}

/** A store and the connections the adapter opened for it beyond the worker's (closed with the adapter). */
interface StoreOfRun {
  readonly store: Store;
  readonly ownConnections: readonly RedisConnection[];
}

/**
 * The store's options as RedisLockStore takes them: the variant's JSON with its stand-ins made
 * real (`subscriber: 'duplicate'`: a duplicate of the client, which the adapter opens and closes).
 */
function storeOptionsOf(
  client: RedisConnection,
  storeOptions: Readonly<Record<string, unknown>>,
): { options: Record<string, unknown>; ownConnections: RedisConnection[] } {
  if (storeOptions.subscriber !== 'duplicate') return { options: { ...storeOptions }, ownConnections: [] };
  // (a plain duplicate: on a Cluster, one without sharded subscribers)
  const subscriber: RedisConnection = client instanceof Cluster ? client.duplicate() : client.duplicate();
  subscriber.on('error', () => undefined);
  return { options: { ...storeOptions, subscriber }, ownConnections: [subscriber] };
}

/**
 * The store of a run: RedisLockStore on the bench's Redis (in the cluster scenario on a Cluster
 * client), or in the quorum scenarios a RedlockStore over one connection to each of the
 * scenario's servers, with its defaults.
 */
async function storeFor(ctx: AdapterContext, storeOptions: Readonly<Record<string, unknown>> | undefined): Promise<StoreOfRun> {
  if (ctx.nodeCount > 1) {
    const { RedlockStore } = redisEntry as unknown as { RedlockStore?: new (clients: unknown[], options?: Readonly<Record<string, unknown>>) => Store };
    if (RedlockStore === undefined) throw new NoQuorumStore('this version of rxjs-lock/redis has no RedlockStore');
    const clients = await ctx.connectNodes();
    return { store: storeOptions === undefined ? new RedlockStore(clients) : new RedlockStore(clients, storeOptions), ownConnections: [] };
  }
  const redis = await ctx.connect();
  // The store opens its own subscriber with redis.duplicate(), which the round-trip counter follows.
  if (storeOptions === undefined) return { store: new RedisLockStore(redis), ownConnections: [] };
  const { options, ownConnections } = storeOptionsOf(redis, storeOptions);
  try {
    return { store: new (RedisLockStore as unknown as StoreConstructor)(redis, options), ownConnections };
  } catch (error) {
    for (const connection of ownConnections) connection.disconnect();
    throw error;
  }
}

export async function createRxjsLock(
  ctx: AdapterContext,
  options: Readonly<Record<string, unknown>>,
  storeOptions?: Readonly<Record<string, unknown>>,
): Promise<LockAdapter> {
  const { store, ownConnections } = await storeFor(ctx, storeOptions);
  // Throws LockOptionsError for an option this version does not know: the worker then skips the variant.
  let locker: ReturnType<typeof createLocker>;
  try {
    locker = createLocker({ store, ...options } as LockerOptions);
  } catch (error) {
    await closeAll(ownConnections);
    throw error;
  }
  const prefix = typeof options.keyPrefix === 'string' ? options.keyPrefix : DEFAULT_KEY_PREFIX;

  /** Waits for the lease of `acquiring`; its timeout becomes AcquireTimeout. */
  const held = async (acquiring: Observable<Core.Lease>): Promise<Held> => {
    try {
      const lease = await firstValueFrom(acquiring);
      return {
        release: async () => {
          await lease.release();
        },
      };
    } catch (error) {
      if (isLockTimeoutError(error)) throw new AcquireTimeout(error.message);
      throw error;
    }
  };
  const sharedLease = (name: string, take: SharedTake, ttl: number, waitTimeout: number): Observable<Core.Lease> => {
    switch (take.kind) {
      case 'permit':
        return locker.acquirePermit(name, { limit: take.limit, waitTimeout, ttl });
      case 'read':
        return locker.acquireReadLock(name, { waitTimeout, ttl });
      case 'write':
        return locker.acquireWriteLock(name, { waitTimeout, ttl });
    }
  };

  return {
    storeKey: (name) => prefix + name,

    acquire: (name, limits) => held(locker.acquire(name, { waitTimeout: limits.waitTimeoutMs, ttl: limits.ttlMs })),

    // Semaphores and read-write locks: one primitive in the store (a read lock is a permit of
    // 2^31 − 1, the write lock all of them); every holder is listed in the `shared-holders` sorted set.
    shared: {
      offers: ['permit', 'read', 'write'],
      storeKey: (name) => sharedKeys(prefix + name)[0],
      acquire: (name, take, limits) => held(sharedLease(name, take, limits.ttlMs, limits.waitTimeoutMs)),
    },

    // The idiomatic way to cancel in RxJS: unsubscribe from `work.pipe(withLock(key))`. The work
    // never ends by itself; its teardown (upstream of withLock) marks the end of the hold.
    holdUntilAborted(name, limits, signal, section) {
      return new Promise((resolve) => {
        let held = false;
        const work = new Observable<never>(() => {
          held = true;
          section.enter();
          return () => section.exit();
        });
        const subscription = work.pipe(locker.withLock<never>(name, { waitTimeout: limits.waitTimeoutMs, ttl: limits.ttlMs })).subscribe({
          error: (error: unknown) => resolve(isLockTimeoutError(error) ? 'timeout' : 'error'),
        });
        const cancel = () => {
          subscription.unsubscribe();
          resolve(held ? 'held' : 'cancelled');
        };
        if (signal.aborted) cancel();
        else signal.addEventListener('abort', cancel, { once: true });
      });
    },

    // Releases after an unsubscribe, and of acquisitions granted after their subscriber left,
    // run inside the engine; the worker's settle pause covers them.
    settle: async () => undefined,
    // Closes the subscriber connection the store opened, where the store has one, and the one
    // the adapter opened for it.
    close: async () => {
      (store as { close?: () => unknown }).close?.();
      await closeAll(ownConnections);
    },
  };
}
