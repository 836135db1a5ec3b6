/**
 * redlock 5.0.0-beta.2 with its default settings (retryDelay 200 ms, retryJitter ±100 ms,
 * driftFactor 0.01), with a single Redis in its client list, or in the quorum scenarios every one
 * of the scenario's independent servers.
 *
 * redlock has no wait limit in milliseconds: it gives up after `retryCount` retries (default 10,
 * about 2.2 s). Each call here passes `retryCount = round(waitTimeout / retryDelay)`, so its
 * retry window matches the scenario's wait limit on average; that is the only setting changed.
 */
import Redlock, { ExecutionError, type Lock } from 'redlock';
import { AcquireTimeout, Background, holdRacingAbort, type AdapterContext, type LockAdapter, type Limits } from './types.js';

export async function createRedlock(ctx: AdapterContext): Promise<LockAdapter> {
  const clients = ctx.nodeCount > 1 ? await ctx.connectNodes() : [await ctx.connect()];
  const redlock = new Redlock(clients);
  const background = new Background();
  const retryCount = (limits: Limits) => Math.max(0, Math.round(limits.waitTimeoutMs / redlock.settings.retryDelay));
  const take = (name: string, limits: Limits) => redlock.acquire([name], limits.ttlMs, { retryCount: retryCount(limits) });
  // A release can fail (the key expired or was taken): the lock is then gone anyway.
  const release = (lock: Lock) =>
    lock.release().then(
      () => undefined,
      () => undefined,
    );

  return {
    storeKey: (name) => name,

    async acquire(name, limits) {
      try {
        const lock = await take(name, limits);
        return { release: () => release(lock) };
      } catch (error) {
        if (error instanceof ExecutionError) throw new AcquireTimeout(error.message);
        throw error;
      }
    },

    // redlock's acquire cannot be cancelled: the caller races it against a timer and, when the
    // timer wins, walks away. The acquisition keeps retrying; if it wins later, nobody releases it.
    holdUntilAborted: (name, limits, signal, section) =>
      holdRacingAbort(
        take(name, limits).then((lock) => ({ release: () => release(lock) })),
        background,
        signal,
        section,
        (e) => e instanceof ExecutionError,
      ),

    settle: () => background.settle(),
    close: async () => undefined,
  };
}
