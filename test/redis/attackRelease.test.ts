/**
 * Attack: `release()` of a lost lease.
 *
 * The Lease contract (src/engine/lease/Lease.ts): release() "Resolves `false` when the key was
 * already gone (expired, taken over, or lost by the store), the lease was lost, or the store could
 * not be reached". A lease lost as 'store-unreachable' on a slow network (its renewals reached
 * Redis and extended the key, but their answers came after commandTimeout) still has its key in
 * Redis; releasing it afterwards deletes that key and resolves `true`, and events$ reports
 * `released` with outcome 'released' after the `lost` event — the holder is told its hold was
 * protected to the end, when it was told a moment earlier that it was not.
 *
 * Set-up on a real Redis: the store's extend answers are delayed (the call reaches Redis at once),
 * so every renewal lands but times out. The lease (ttl 300) is lost at its deadline as
 * 'store-unreachable'; then release() is called.
 */
import { firstValueFrom, retry } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { ExtendRequest } from '../../src/store/capabilities.js';
import type { ExtendOutcome } from '../../src/store/LockStore.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite({ flush: false });

/** A RedisLockStore whose extend answers come `replyDelay` ms late (the command itself runs at once). */
class SlowExtendAnswers extends RedisLockStore {
  replyDelay = 0;
  override extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    const answer = super.extend(key, token, ttlMs);
    return answer.then(async (outcome) => (await sleep(this.replyDelay), outcome));
  }
  override extendMany(requests: readonly ExtendRequest[]): Promise<Array<ExtendOutcome | Error>> {
    const answer = super.extendMany(requests);
    return answer.then(async (outcomes) => (await sleep(this.replyDelay), outcomes));
  }
}

describe('attack: release() of a lease lost as store-unreachable', () => {
  it('resolves false, and events$ does not report it released after reporting it lost', async () => {
    const client = connect(suite.server);
    const store = new SlowExtendAnswers(client);
    const locker = createLocker({ store, ttl: 300, commandTimeout: 50 });
    const events: LockEvent[] = [];
    const subscription = locker.events$.subscribe((e) => events.push(e));
    try {
      // The acquisition itself has the same 50 ms budget: on a loaded machine its first call can
      // miss it (connection, script load); what is tested starts once the lease is held.
      await client.ping();
      const lease = await firstValueFrom(locker.acquire('slow-renewals').pipe(retry({ count: 5, delay: 50 })));
      store.replyDelay = 400;
      const lost = await firstValueFrom(lease.lost$);
      expect(lost.reason).toBe('store-unreachable');
      expect(lease.held).toBe(false);
      const stillInRedis = (await suite.admin.get('lock:slow-renewals')) === lease.token;

      const released = await lease.release();
      await sleep(100);
      const afterLost = events.slice(events.findIndex((e) => e.type === 'lost'));
      expect({ stillInRedis, released, afterLost: afterLost.map((e) => (e.type === 'released' ? `released:${e.outcome}` : e.type)) }).toEqual({
        stillInRedis,
        released: false,
        afterLost: expect.not.arrayContaining(['released:released']),
      });
    } finally {
      store.replyDelay = 0;
      await locker.close();
      subscription.unsubscribe();
      store.close();
      client.disconnect();
    }
  });
});
