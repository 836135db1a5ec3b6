/**
 * Attack: a joined `acquire()` hold whose lease was lost, never released by its caller (nothing is
 * left to give back: without reentrancy a lost lease needs no release). Does the stream that took
 * the lease still end, and does the next waiter of the key still get it?
 */
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type Lease } from '../../src/index.js';

describe('attack: a lost joined acquire() hold its caller never releases', () => {
  it('the outer stream (onLost: notify) still completes once its work ends, and the next waiter gets the key', async () => {
    const store = new MemoryLockStore();
    const extend = store.extend.bind(store);
    let lose = false;
    store.extend = (key, token, ttl) => (lose ? Promise.resolve('gone' as const) : extend(key, token, ttl));
    const locker = createLocker({ store, keyPrefix: '', reentrant: true, ttl: 300 });
    try {
      let inner: Lease | undefined;
      const outer = lastValueFrom(
        locker.using(
          'k',
          async () => {
            inner = await firstValueFrom(locker.acquire('k')); // joins; never released
            lose = true;
            await firstValueFrom(inner.lost$, { defaultValue: undefined });
            return 'outer done';
          },
          { onLost: 'notify' },
        ),
      ).catch((e: unknown) => e);
      const ended = await Promise.race([outer, new Promise((resolve) => setTimeout(() => resolve('outer still running'), 2_000))]);
      expect(ended).toBe('outer done');
      lose = false;
      expect(await lastValueFrom(of('next').pipe(locker.withLock('k', { waitTimeout: 2_000 })))).toBe('next');
      expect(inner?.held).toBe(false);
    } finally {
      await locker.close();
    }
  });
});
