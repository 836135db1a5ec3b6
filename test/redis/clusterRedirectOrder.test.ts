/**
 * A batched renewal that meets a moved slot on a Redis Cluster, and a later manual `extend(ttl)`
 * to a longer TTL of the same lease, answered together (the old owner of the slot was frozen while
 * both were in flight). Each is answered MOVED. ioredis sends the lone extend again to the new
 * owner as it reads the redirection; the renewal's redirection comes through the pipeline's answer
 * and the store's promise steps, so a renewal sent again after it ran after the manual extend:
 * the key ends with the renewal's (shorter) TTL, while the lease, which takes the manual extend as
 * the last call run, counted on the longer one — `held` past the key's expiry, and another locker
 * could take the key.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type ExtendOutcome } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { ExtendRequest } from '../../src/store/capabilities.js';
import { addressOf, clusterForSuite, connectWithStaleSlots, masterOf, migrateSlot } from '../support/clusterNodes.js';
import { keySlot } from '../support/keySlot.js';
import { eventually, sleep } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();
// (the slot table kept as read: the renewal must meet the moved slot)
const suite = clusterForSuite(connectWithStaleSlots);

/** The Redis store, counting the renewal batches it was asked to send. */
class CountingBatches extends RedisLockStore {
  batches = 0;
  override extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    this.batches++;
    return super.extendMany(requests);
  }
}

describe('a batched renewal redirected (MOVED) and a later longer manual extend, answered together', () => {
  it('the lease never counts on more than the key has', async () => {
    const { cluster, client, nodes } = suite;
    const store = new CountingBatches(client, { wakeUp: false });
    const other = new RedisLockStore(client, { wakeUp: false });
    const locker = createLocker({ store, keyPrefix: '', ttl: 3_000, commandTimeout: 10_000 });
    const rival = createLocker({ store: other, keyPrefix: '', renew: false });
    try {
      // a key in the slot that moves, and one of another slot of the same master: renewed together
      const moving = '{redirect-order}:a';
      const sourceAddress = masterOf(client, moving);
      let stay = '';
      for (let n = 0; stay === ''; n++) if (masterOf(client, `stay:${n}`) === sourceAddress && keySlot(`stay:${n}`) !== keySlot(moving)) stay = `stay:${n}`;
      const [lease] = await Promise.all([firstValueFrom(locker.acquire(moving)), firstValueFrom(locker.acquire(stay))]);
      const source = nodes.find((node) => addressOf(node) === sourceAddress)!;
      const target = nodes.find((node) => node !== source)!;
      await migrateSlot(keySlot(moving), source, target, nodes);
      expect(masterOf(client, moving)).toBe(sourceAddress); // the client's table is stale
      const frozen = cluster.nodes.find((node) => `${node.host}:${node.port}` === sourceAddress)!;
      frozen.pause();
      let sent: number;
      try {
        // the renewal batch goes out to the frozen old owner
        await eventually(async () => store.batches === 1, 3_000);
        const extending = lease!.extend(20_000);
        sent = performance.now();
        await sleep(30);
        frozen.resume();
        expect(await extending).toBe(true);
      } finally {
        frozen.resume();
      }
      await sleep(50); // (the renewal's answer too)
      const pttl = await target.pttl(moving);
      // Whatever the order the two calls ran in, the lease must not count on more than the key has.
      const claimed = lease!.validUntil - performance.now();
      // Once the key expired, another locker takes it: the lease must not say it is held then.
      await sleep(Math.max(0, pttl) + 50);
      const taken = await firstValueFrom(rival.acquire(moving, { ttl: 1_000, waitTimeout: 0 })).catch(() => undefined);
      const heldByBoth = taken !== undefined && lease!.held;
      await taken?.release();
      expect(sent).toBeGreaterThan(0);
      expect({ heldByBoth, claimedPastKey: claimed > pttl }).toEqual({ heldByBoth: false, claimedPastKey: false });
    } finally {
      await Promise.all([locker.close(), rival.close()]);
      store.close();
      other.close();
    }
  }, 30_000);
});
