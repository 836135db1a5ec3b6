/**
 * Which locks the running code holds: the context that makes `withLock`, `using` and `acquire`
 * reentrant. The work of `withLock`/`using` is subscribed inside a frame naming the lock it runs
 * under (Node's `AsyncLocalStorage`), on top of the frames of the code that subscribed to it. Node
 * carries the frame into everything that work starts: its synchronous subscriptions (nested
 * operators, `mergeMap` fan-out of a synchronous source), timers, promise continuations and I/O
 * callbacks. A nested acquisition looks for a live hold on its own key of its own locker in those
 * frames and joins it instead of waiting for itself.
 *
 * A frame is captured when a stream is subscribed, never where a lease happens to be granted (a
 * grant arrives in a callback of whoever made the store call or passed the lock), so a lock
 * passed from one stream to another does not carry the giver's holds.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SharedHold } from './SharedHold.js';

/** A lock held by the code running in this frame, and the frames around it. */
export interface HoldFrame {
  readonly hold: SharedHold;
  readonly parent: HoldFrame | undefined;
}

const frames = new AsyncLocalStorage<HoldFrame>();

/** The frames of the running code (to capture when a stream is subscribed). */
export function currentFrame(): HoldFrame | undefined {
  return frames.getStore();
}

/** A live hold on `storeKey` of `owner`'s in `frame` or the frames around it. */
export function enclosingHold(frame: HoldFrame | undefined, owner: object, storeKey: string): SharedHold | undefined {
  for (let f = frame; f !== undefined; f = f.parent) {
    const hold = f.hold;
    if (hold.owner === owner && hold.storeKey === storeKey && hold.live) return hold;
  }
  return undefined;
}

/** Runs `fn` (a subscription) with `hold` on top of `parent`: what it starts sees the hold. */
export function runHolding<T>(hold: SharedHold, parent: HoldFrame | undefined, fn: () => T): T {
  return frames.run({ hold, parent }, fn);
}

/** Runs `fn` in `frame` (captured earlier), whatever the caller's own context is. */
export function runInFrame<T>(frame: HoldFrame | undefined, fn: () => T): T {
  if (frame === frames.getStore()) return fn();
  return frame === undefined ? frames.exit(fn) : frames.run(frame, fn);
}
