/**
 * A store that measures a grant's validity itself (`Acquired.validity`, as the quorum store does:
 * ttl − the attempt's time − its drift allowance): the lease's deadline is that validity counted
 * from the call's send time, when it is shorter than the engine's own margin, and the grant costs
 * no extension (the key has the TTL asked for).
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type AcquireResult, type LockStore } from '../../src/index.js';
import { leaseValidity } from '../../src/options/validity.js';
import { RecordingStore } from '../support/recordingStore.js';

/** The memory store, answering every grant with `validity`. */
function measuringStore(validity: number): LockStore {
  const inner = new MemoryLockStore();
  return {
    tryAcquire: (key, token, ttl, fences) => inner.tryAcquire(key, token, ttl, fences).then((r): AcquireResult => (r.acquired ? { ...r, validity } : r)),
    extend: (key, token, ttl) => inner.extend(key, token, ttl),
    release: (key, token) => inner.release(key, token),
  };
}

describe("a store's own validity (Acquired.validity)", () => {
  it('ends the lease at the validity, counted from the send time, with no extension paid for it', async () => {
    const store = new RecordingStore(measuringStore(4_000));
    const locker = createLocker({ store, ttl: 10_000, renew: false });
    const before = performance.now();
    const lease = await firstValueFrom(locker.acquire('v'));
    const after = performance.now();
    expect(lease.validUntil).toBeGreaterThanOrEqual(before + 4_000);
    expect(lease.validUntil).toBeLessThanOrEqual(after + 4_000);
    expect(lease.ttl).toBe(10_000);
    expect(await lease.release()).toBe(true);
    expect(store.count('extend')).toBe(0);
    await locker.close();
  });

  it("a validity longer than the engine's own margin does not lengthen the lease", async () => {
    const locker = createLocker({ store: measuringStore(60_000), ttl: 10_000, renew: false });
    const before = performance.now();
    const lease = await firstValueFrom(locker.acquire('v'));
    expect(lease.validUntil).toBeLessThanOrEqual(performance.now() + leaseValidity(10_000));
    expect(lease.validUntil).toBeGreaterThanOrEqual(before + leaseValidity(10_000));
    await lease.release();
    await locker.close();
  });
});
