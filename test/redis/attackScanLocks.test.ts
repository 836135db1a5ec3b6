/**
 * Attack on `scanLocks` (the inspect CLI's scan) with a store whose ioredis client has a
 * `keyPrefix`. The lock's helper keys (its line) carry the client prefix in front of the reserved
 * namespace and are named after the key as that client sees it: folded into the locker's prefix
 * (as the README said: `--prefix app:lock:`) the scan read other keys, and listed 0 waiting.
 * Given apart (`clientPrefix`, `--client-prefix`), the waiters must be read from them.
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
    suite.closers.push(
      () => holderClient.disconnect(),
      () => waiterClient.disconnect(),
    );
    const holder = createLocker({ store: new RedisLockStore(holderClient), ttl: 30_000 });
    suite.closers.push(() => holder.close());
    const lease = await firstValueFrom(holder.acquire('order:1'));
    const waiter = new RedisLockStore(waiterClient);
    expect(await waiter.tryAcquireInLine('lock:order:1', 'w', 30_000, 1, 'keep')).toMatchObject({ acquired: false, queued: true });

    const listed = [];
    for await (const lock of scanLocks(suite.admin as unknown as ScanningClient, { clientPrefix })) listed.push(lock);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'order:1', token: lease.token, waiting: 1 });
  });
});
