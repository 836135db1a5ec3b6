/**
 * Stores and lockers on a Redis test suite's server, each on a new client and closed after the
 * current test (the suite's closers).
 */
import { createLocker, type LockEvent, type Locker, type LockerOptions } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import { connect } from './redis.js';
import type { RedisSuite } from './redisSuite.js';

export interface SuiteLocker {
  readonly locker: Locker;
  readonly store: RedisLockStore;
  /** Every event of the locker, in order. */
  readonly events: LockEvent[];
}

/** A `RedisLockStore` (with `storeOptions`) on a new client of the suite's server. */
export function suiteStore(suite: RedisSuite, storeOptions: RedisLockStoreOptions = {}): RedisLockStore {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, storeOptions);
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
  );
  return store;
}

/** A locker with `options` on a {@link suiteStore}, and the events it emits. */
export function suiteLocker(suite: RedisSuite, options: Omit<LockerOptions, 'store'> = {}, storeOptions: RedisLockStoreOptions = {}): SuiteLocker {
  const store = suiteStore(suite, storeOptions);
  const locker = createLocker({ store, ...options });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  suite.closers.push(() => locker.close());
  return { locker, store, events };
}
