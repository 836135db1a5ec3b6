/**
 * Attack on `scanLocks` (the inspect CLI's scan) with a store whose ioredis client has a
 * `keyPrefix`: the README says to pass that prefix in front of the locker's (`--prefix app:lock:`).
 * The lock's helper keys (its line) then carry the client prefix in front of the reserved
 * namespace: the waiters and fence must still be read from them.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/index.js';
import { RedisLockStore, scanLocks, type ScanningClient } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

describe('attack: scanLocks with a client keyPrefix', () => {
  it.each(['app:', '{app}:'])("lists a lock of a store on a client with keyPrefix '%s', with its waiter", async (clientPrefix) => {
    const holderClient = connect(suite.server, { keyPrefix: clientPrefix });
    const waiterClient = connect(suite.server, { keyPrefix: clientPrefix });
    suite.closers.push(() => holderClient.disconnect(), () => waiterClient.disconnect());
    const holder = createLocker({ store: new RedisLockStore(holderClient), ttl: 30_000 });
    suite.closers.push(() => holder.close());
    const lease = await firstValueFrom(holder.acquire('order:1'));
    const waiter = new RedisLockStore(waiterClient);
    expect(await waiter.tryAcquireInLine('lock:order:1', 'w', 30_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });

    const listed = [];
    for await (const lock of scanLocks(suite.admin as unknown as ScanningClient, { keyPrefix: `${clientPrefix}lock:` })) listed.push(lock);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'order:1', token: lease.token, waiting: 1 });
  });
});
