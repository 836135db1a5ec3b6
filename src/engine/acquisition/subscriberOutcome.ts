/**
 * How an acquisition tells its subscriber the outcome. It arrives in a callback of whoever called
 * the store or passed the lock — maybe the work of another stream, in its reentrancy frames — so it
 * is told in the subscriber's own frames, captured at subscription: what the subscriber then
 * subscribes cannot join the giver's other holds. A lease granted after the subscriber left is
 * given back.
 */
import type { Subscriber } from 'rxjs';
import { currentFrame, runInFrame, type Frame } from '../reentrancy/frames.js';

export interface SubscriberOutcome<L> {
  granted(lease: L): void;
  failed(error: unknown): void;
}

/** Call at subscription (it captures the subscriber's frames then). */
export function subscriberOutcome<L extends { release(): Promise<boolean> }>(subscriber: Subscriber<L>): SubscriberOutcome<L> {
  return new Outcome(subscriber, currentFrame());
}

/** (A class, not an object of closures: one is made for every acquisition.) */
class Outcome<L extends { release(): Promise<boolean> }> implements SubscriberOutcome<L> {
  constructor(
    private readonly subscriber: Subscriber<L>,
    /** The subscriber's frames. */
    private readonly frame: Frame | undefined,
  ) {}

  granted(lease: L): void {
    const subscriber = this.subscriber;
    if (subscriber.closed) {
      void lease.release();
      return;
    }
    if (this.frame === currentFrame()) tell(subscriber, lease);
    else runInFrame(this.frame, () => tell(subscriber, lease));
  }

  failed(error: unknown): void {
    const subscriber = this.subscriber;
    if (this.frame === currentFrame()) subscriber.error(error);
    else runInFrame(this.frame, () => subscriber.error(error));
  }
}

function tell<L>(subscriber: Subscriber<L>, lease: L): void {
  subscriber.next(lease);
  subscriber.complete();
}
