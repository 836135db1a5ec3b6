/**
 * Drives a TestScheduler's virtual clock while letting real promises (store calls) settle in
 * between: run every action due at the next frame, then drain the microtask queue, and repeat.
 */
import type { TestScheduler } from 'rxjs/testing';

export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Advances virtual time frame by frame until `done()` holds or `limit` frames have passed. */
export async function runUntil(scheduler: TestScheduler, done: () => boolean, limit = 1_000_000): Promise<void> {
  await settle();
  while (!done()) {
    const next = scheduler.actions[0];
    if (next === undefined) throw new Error(`virtual time stalled at frame ${scheduler.now()}: nothing scheduled`);
    if (next.delay > limit) throw new Error(`virtual time passed ${limit}`);
    scheduler.maxFrames = next.delay;
    scheduler.flush();
    await settle();
  }
}

/**
 * Runs the virtual clock frame by frame (letting the store's promises settle in between) until
 * `done()` holds, nothing is scheduled any more, or the next action is past `untilFrame`.
 */
export async function runVirtual(scheduler: TestScheduler, done: () => boolean, untilFrame: number): Promise<void> {
  await settle();
  while (!done()) {
    const next = scheduler.actions[0];
    if (next === undefined || next.delay > untilFrame) return;
    scheduler.maxFrames = next.delay;
    scheduler.flush();
    await settle();
  }
}
