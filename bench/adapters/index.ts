/**
 * Builds the adapter of one library. Each adapter module is loaded only when its library runs, so
 * a library that fails to load (rxjs-lock's source half-way through a change, say) fails its own
 * runs and no others.
 */
import type { BenchEntry } from '../libraries.js';
import type { AdapterContext, LockAdapter } from './types.js';

export async function createAdapter(entry: BenchEntry, ctx: AdapterContext): Promise<LockAdapter> {
  switch (entry.library) {
    case 'rxjs-lock':
      return (await import('./rxjsLock.js')).createRxjsLock(ctx, entry.options, entry.storeOptions);
    case 'redlock':
      return (await import('./redlock.js')).createRedlock(ctx);
    case 'redis-semaphore':
      return (await import('./redisSemaphore.js')).createRedisSemaphore(ctx);
    case 'baseline':
      return (await import('./baseline.js')).createBaseline(ctx);
    case 'store-only':
      return (await import('./references.js')).createStoreOnly(ctx);
    case 'script-floor':
      return (await import('./scriptFloors.js')).createScriptFloor(ctx);
    case 'fenced-floor':
      return (await import('./scriptFloors.js')).createFencedFloor(ctx);
    case 'quorum-floor':
      return (await import('./quorumFloor.js')).createQuorumFloor(ctx);
  }
}

/**
 * Loads every adapter (and so rxjs-lock's source) now, so that all worker processes run the
 * source as it was when the bench started, even if it is edited during the run. A library that
 * fails to load fails again, with the same error, when its run builds it.
 */
export async function preloadAdapters(): Promise<void> {
  await Promise.allSettled([
    import('./rxjsLock.js'),
    import('./redlock.js'),
    import('./redisSemaphore.js'),
    import('./baseline.js'),
    import('./references.js'),
    import('./scriptFloors.js'),
    import('./quorumFloor.js'),
  ]);
}
