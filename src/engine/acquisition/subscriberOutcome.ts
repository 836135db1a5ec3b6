/**
 * How an acquisition tells its subscriber the outcome. It arrives in a callback of whoever called
 * the store or passed the lock — maybe the work of another stream, in its reentrancy frames — so it
 * is told in the subscriber's own frames, captured at subscription: what the subscriber then
 * subscribes cannot join the giver's other holds. A lease granted after the subscriber left is
 * given back.
 */
import type { Subscriber } from 'rxjs';
import { currentFrame, runInFrame } from '../reentrancy/frames.js';

export interface SubscriberOutcome<L> {
  granted(lease: L): void;
  failed(error: unknown): void;
}

/** Call at subscription (it captures the subscriber's frames then). */
export function subscriberOutcome<L extends { release(): Promise<boolean> }>(subscriber: Subscriber<L>): SubscriberOutcome<L> {
  const frame = currentFrame();
  return {
    granted(lease) {
      if (subscriber.closed) {
        void lease.release();
        return;
      }
      runInFrame(frame, () => {
        subscriber.next(lease);
        subscriber.complete();
      });
    },
    failed(error) {
      runInFrame(frame, () => subscriber.error(error));
    },
  };
}
