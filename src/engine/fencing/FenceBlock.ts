/**
 * Fence arithmetic: where each holder's fencing token comes from.
 *
 * A store grant reserves a block of consecutive fences (see `LockStore.tryAcquire`): the holder
 * that won the grant takes the first, and each local successor the lock passes to without the
 * store (a cohort hand-off) takes the next one. Blocks of one key never overlap and grow with every
 * grant, so fences strictly increase across every holder of the key, local or not. When a block is
 * used up the lock goes back to the store for a new one.
 *
 * The store may grant fewer fences than asked (the Redis store never reserves fences above its
 * clock, see backends/redis/protocol/lua/lib/fences.lua): the block is what it granted, and a pass
 * that finds it used up goes back to the store.
 */

/** Fences reserved by a grant for a process with nobody else waiting: room for a few late arrivals. */
const SPARE_FENCES = 16;

/**
 * How many fences a store grant should reserve: one for the holder, plus up to `maxPasses` for
 * local successors when others of this process already wait for the key, else a small spare.
 */
export function fencesToReserve(localWaiting: number, maxPasses: number): number {
  if (maxPasses <= 0) return 1;
  return 1 + (localWaiting > 0 ? maxPasses : Math.min(maxPasses, SPARE_FENCES - 1));
}

/** The fences one store grant reserved: `first … first + size − 1`. */
export class FenceBlock {
  private used = 1;

  constructor(
    /** The fence of the holder that won the grant. */
    readonly first: number,
    readonly size: number,
  ) {}

  /** Fences given out: the grant's holder's and its successors'. */
  get issued(): number {
    return this.used;
  }

  /** Fences left for local successors. */
  get left(): number {
    return this.size - this.used;
  }

  /** The next successor's fence, or `undefined` when the block is used up. */
  take(): number | undefined {
    if (this.used >= this.size) return undefined;
    return this.first + this.used++;
  }
}
