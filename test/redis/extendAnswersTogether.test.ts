/**
 * A renewal and a later manual `extend(ttl)` to a shorter TTL, both sent while Redis is frozen
 * (SIGSTOP): Redis runs them in the order they were sent, so the key ends with the shorter TTL,
 * and their replies come back together in one read once it thaws. The renewal's reply goes through
 * more promise steps in the engine than the manual extend's, so it is handled last; the lease must
 * still count on the shorter TTL only (before the fix it took the renewal's: `held` with a deadline
 * past the key's expiry, while another process could take the key).
 * The in-memory version of this race is in test/engine/shorterExtend.test.ts.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type ExtendOutcome } from '../../src/index.js';
import { leaseValidity } from '../../src/options/validity.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** The Redis store, counting the extend calls it was asked to send. */
class CountingExtends extends RedisLockStore {
  extends = 0;
  override extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    this.extends++;
    return super.extend(key, token, ttlMs);
  }
}

describe('a renewal and a shorter manual extend answered together by a thawed Redis', () => {
  it('the lease keeps the shorter TTL, as the key does', async () => {
    const client = connect(suite.server);
    const store = new CountingExtends(client);
    const locker = createLocker({ store, ttl: 5_000, renew: { interval: 150 }, commandTimeout: 5_000 });
    suite.closers.push(
      () => client.quit(),
      () => locker.close(),
    );
    const lease = await firstValueFrom(locker.acquire('k'));
    suite.server.pause();
    let sent: number;
    try {
      // the renewal goes out into the frozen server's socket
      await eventually(async () => store.extends === 1, 2_000);
      const extending = lease.extend(400);
      sent = performance.now();
      await sleep(30);
      suite.server.resume();
      expect(await extending).toBe(true);
    } finally {
      suite.server.resume();
    }
    await sleep(0);
    const pttl = await suite.admin.pttl('lock:k');
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(400);
    expect(lease.ttl).toBe(400);
    expect(lease.validUntil).toBeLessThanOrEqual(sent + leaseValidity(400));
    await lease.release();
  });
});
