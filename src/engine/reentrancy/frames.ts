/**
 * The reentrancy context itself (Node's `AsyncLocalStorage`): which frame the running code is in,
 * running code in a captured frame, and telling a subscriber in the frame it subscribed in. What a
 * frame holds is ./enclosingHolds' business; this file knows only that frames nest, so the lease
 * classes can tell their subscribers where they subscribed without depending on the holds.
 *
 * A frame is captured when a stream is subscribed, never where a lease happens to be granted (a
 * grant arrives in a callback of whoever made the store call or passed the lock), so a lock
 * passed from one stream to another does not carry the giver's holds. The same goes for
 * everything else the engine tells a subscriber from its own callbacks — a loss found by the
 * locker's one lease timer (armed by whichever stream scheduled the earliest renewal) or by
 * `close()`, the end of a wait: it is told in the subscriber's frames.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Observable } from 'rxjs';

/** One frame of the context, on top of the frames around it. */
export interface Frame {
  readonly parent: Frame | undefined;
}

const frames = new AsyncLocalStorage<Frame>();

/** The frame of the running code (to capture when a stream is subscribed). */
export function currentFrame(): Frame | undefined {
  return frames.getStore();
}

/** Runs `fn` with `frame` as the running code's frame (what it starts carries it). */
export function enterFrame<T>(frame: Frame, fn: () => T): T {
  return frames.run(frame, fn);
}

/** Runs `fn` in `frame` (captured earlier), whatever the caller's own context is. */
export function runInFrame<T>(frame: Frame | undefined, fn: () => T): T {
  if (frame === frames.getStore()) return fn();
  return frame === undefined ? frames.exit(fn) : frames.run(frame, fn);
}

/**
 * `source` as its subscribers see it: each one is told (next, error, complete) in the frame it
 * subscribed in, whatever code the source emits from — a timer armed by another stream's work, or
 * `close()` called from inside one. Without it, a subscriber reacting to a loss by subscribing to
 * another acquisition could join a hold of that other stream.
 */
export function toldWhereSubscribed<T>(source: Observable<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const frame = currentFrame();
    return source.subscribe({
      next: (value) => runInFrame(frame, () => subscriber.next(value)),
      error: (error: unknown) => runInFrame(frame, () => subscriber.error(error)),
      complete: () => runInFrame(frame, () => subscriber.complete()),
    });
  });
}
