/**
 * Which locks the running code holds: the context that makes `withLock`, `using` and `acquire`
 * reentrant. The work of `withLock`/`using` is subscribed inside a frame naming the lock it runs
 * under (Node's `AsyncLocalStorage`), on top of the frames of the code that subscribed to it. Node
 * carries the frame into everything that work starts: its synchronous subscriptions (nested
 * operators, `mergeMap` fan-out of a synchronous source), timers, promise continuations and I/O
 * callbacks. A nested acquisition looks for a live hold on its own key of its own locker in those
 * frames and joins it instead of waiting for itself.
 *
 * Frames are captured where streams are subscribed, never where a lease is granted or lost: see
 * ./frames.
 */
import { enterFrame, runInFrame, type Frame } from './frames.js';
import type { HoldMode, SharedHold } from './SharedHold.js';

export { currentFrame, runInFrame } from './frames.js';

/** A lock held by the code running in this frame, and the frames around it. */
export interface HoldFrame extends Frame {
  readonly hold: SharedHold;
  readonly parent: HoldFrame | undefined;
}

/**
 * The innermost live hold on `storeKey` of `owner`'s, of one of `modes`, in `frame` or the frames
 * around it.
 */
export function enclosingHold(frame: Frame | undefined, owner: object, storeKey: string, modes: readonly HoldMode[] = MUTEX): SharedHold | undefined {
  // (every frame entered is a HoldFrame: runHolding is the only way in)
  for (let f = frame as HoldFrame | undefined; f !== undefined; f = f.parent) {
    const hold = f.hold;
    if (hold.owner === owner && hold.storeKey === storeKey && hold.live && modes.includes(hold.mode)) return hold;
  }
  return undefined;
}

const MUTEX: readonly HoldMode[] = ['mutex'];

/** Runs `fn` (a subscription) with `hold` on top of `parent`: what it starts sees the hold. */
export function runHolding<T>(hold: SharedHold, parent: Frame | undefined, fn: () => T): T {
  const frame: HoldFrame = { hold, parent: parent as HoldFrame | undefined };
  return enterFrame(frame, fn);
}

/**
 * Runs `fn` with every one of `holds` on top of `parent` (one frame each, the last innermost):
 * the work of a multi-key stream, which streams nested in it join on any of its keys.
 */
export function runHoldingAll<T>(holds: readonly SharedHold[], parent: Frame | undefined, fn: () => T): T {
  let frame = parent as HoldFrame | undefined;
  for (const hold of holds) frame = { hold, parent: frame };
  return runInFrame(frame, fn);
}
