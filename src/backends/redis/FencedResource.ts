/**
 * A value in Redis that only the current lock holder can overwrite: the resource side of fencing
 * (seed 002). A lease can be lost without its holder noticing in time (a long GC pause, a stalled
 * event loop, a network partition); its holder may then write after the next holder did. Every
 * write therefore carries the writer's fencing token (`lease.fence`), and the resource refuses a
 * write whose token is lower than the highest it has accepted.
 */
import { LockOptionsError } from '../../errors/errors.js';
import { validateKey } from '../../options/validate.js';
import { defineCommands, runScript } from './protocol/commands.js';
import { isReserved, reservedKeyError } from './protocol/keyLayout.js';
import type { RedisClient } from './RedisClient.js';

/**
 * Outcome of {@link FencedResource.write}.
 *
 * @example
 * ```ts
 * const ledger = new FencedResource(redis, 'ledger:7');
 * const result: FencedWriteResult = await ledger.write(lease.fence, JSON.stringify(entry));
 * if (!result.accepted) log.warn(`write refused: holder with fence ${result.highestFence} wrote already`);
 * ```
 */
export type FencedWriteResult =
  /** Written; `fence` is now the highest token accepted. */
  | {
      /** The value was written. */
      readonly accepted: true;
      /** The highest token accepted so far: the one just written. */
      readonly fence: number;
    }
  /** Refused: a writer with the higher token `highestFence` has written already. */
  | {
      /** The value was refused. */
      readonly accepted: false;
      /** The token of the newer writer that wrote already. */
      readonly highestFence: number;
    };

/**
 * A Redis hash (`fence`, `value`) written only with a fencing token at least as high as every
 * token it accepted before, checked and written atomically by one Lua script.
 *
 * @example
 * ```ts
 * import { lastValueFrom } from 'rxjs';
 * import { FencedResource } from 'rxjs-lock/redis';
 *
 * const report = new FencedResource(redis, 'report:2026-11');
 * await lastValueFrom(
 *   locker.using('report:2026-11', async (lease) => {
 *     const result = await report.write(lease.fence, render());
 *     if (!result.accepted) console.warn(`a newer holder (fence ${result.highestFence}) wrote first`);
 *   }),
 * );
 * ```
 */
export class FencedResource {
  /**
   * @param client The ioredis client to write with (yours to close).
   * @param key The Redis key of the resource (a non-empty string of at most 4096 characters, not in
   *   the lock store's `rxjs-lock:` namespace).
   */
  constructor(
    private readonly client: RedisClient,
    readonly key: string,
  ) {
    if (typeof client !== 'object' || client === null || typeof client.defineCommand !== 'function') {
      throw new LockOptionsError('client', 'an ioredis client (a Redis or a Cluster)', client);
    }
    validateKey(key);
    if (isReserved(key, client.options?.keyPrefix ?? '')) throw reservedKeyError(key);
    defineCommands(client);
  }

  /**
   * Writes `value` if `fence` is at least the highest token accepted so far. Resolves whether it
   * was written; rejects only when Redis fails. `fence` must be a positive safe integer
   * (`LockOptionsError` otherwise).
   */
  async write(fence: number, value: string): Promise<FencedWriteResult> {
    if (!Number.isSafeInteger(fence) || fence < 1) throw new LockOptionsError('fence', 'a positive safe integer (a lease.fence)', fence);
    if (typeof value !== 'string') throw new LockOptionsError('value', 'a string', value);
    const [written, highest] = (await runScript(this.client, 'fencedWrite', [this.key], [fence, value])) as [number, number];
    return written === 1 ? { accepted: true, fence: highest } : { accepted: false, highestFence: highest };
  }

  /** The last accepted write and its token, or `undefined` when nothing was written yet. */
  async read(): Promise<
    | {
        /** The token of the last accepted write. */
        readonly fence: number;
        /** The value it wrote. */
        readonly value: string;
      }
    | undefined
  > {
    const [fence, value] = (await runScript(this.client, 'fencedRead', [this.key], [])) as [string | null, string | null];
    return fence === null || value === null ? undefined : { fence: Number(fence), value };
  }
}
