/**
 * References that are not libraries, to say where a gap to the baseline (on one server) or to
 * redlock (on a quorum) comes from (see ../libraries.ts for where each runs):
 *
 * - `store-only`: rxjs-lock's store called directly, with no engine above it: `tryAcquire` then
 *   `release` with the grant, the baseline's 10 ms sleep between refused tries. On one server
 *   `RedisLockStore`; in the uncontended quorum scenarios `RedlockStore` over one connection to
 *   each server, with its defaults (as rxjs-lock's run builds it). What is left between it and
 *   rxjs-lock is the engine's cost; what is left between it and the baseline is the store's
 *   protocol (its scripts on the server, their calls on the client).
 * - `script-floor` and `fenced-floor` (one server): ./scriptFloors.ts.
 * - `quorum-floor` (the uncontended quorum scenarios): ./quorumFloor.ts.
 */
import { randomUUID } from 'node:crypto';
import type * as RedisEntry from '../../src/redis.js';
import { pollForLock } from './baseline.js';
import { adapterOf, type AdapterContext, type LockAdapter, type Limits } from './types.js';

const { RedisLockStore, RedlockStore } = (await import(new URL('../../dist/esm/redis.js', import.meta.url).href)) as typeof RedisEntry;

/** The part of a store that store-only calls. */
type CalledStore = Pick<InstanceType<typeof RedisLockStore>, 'tryAcquire' | 'release'>;

export async function createStoreOnly(ctx: AdapterContext): Promise<LockAdapter> {
  let store: CalledStore;
  let close: () => Promise<void> = async () => undefined;
  if (ctx.nodeCount > 1) {
    // RedlockStore with its defaults, as rxjs-lock's quorum run builds it (../adapters/rxjsLock.ts):
    // the same script arguments (its hint inbox among them). Its hint connections open on the
    // first wait only (WakeInbox.watch), which store-only never does.
    const quorumStore = new RedlockStore(await ctx.connectNodes());
    store = quorumStore;
    close = async () => quorumStore.close();
  } else {
    // No wake-ups: nothing waits in line here, and the subscriber connection would be one more.
    store = new RedisLockStore(await ctx.connect(), { wakeUp: false });
  }
  const acquire = (name: string, limits: Limits) => {
    const token = randomUUID();
    return pollForLock(
      async () => {
        const result = await store.tryAcquire(name, token, limits.ttlMs);
        if (!result.acquired) return null;
        const grant = { fence: result.fence, fences: result.fences ?? 1, answeredAt: performance.now() };
        return {
          release: () =>
            store.release(name, token, grant).then(
              () => undefined,
              () => undefined,
            ),
        };
      },
      name,
      limits,
    );
  };
  return adapterOf(acquire, close);
}
