/**
 * A locker on a Redis test suite's server: a new client, a `RedisLockStore` on it (with
 * `storeOptions`), a locker with `options`, and the events it emits, each closed after the current
 * test (the suite's closers).
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

export function suiteLocker(suite: RedisSuite, options: Omit<LockerOptions, 'store'> = {}, storeOptions: RedisLockStoreOptions = {}): SuiteLocker {
  const client = connect(suite.server);
  const store = new RedisLockStore(client, storeOptions);
  const locker = createLocker({ store, ...options });
  const events: LockEvent[] = [];
  locker.events$.subscribe((e) => events.push(e));
  suite.closers.push(
    () => client.disconnect(),
    () => store.close(),
    () => locker.close(),
  );
  return { locker, store, events };
}
