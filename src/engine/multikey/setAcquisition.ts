/**
 * A multi-key acquisition as an Observable: takes every key of a set, one after the other in lock
 * order (./lockOrder.ts), each through its own key's acquisition (its gate, its place in the
 * store's line, its wake-ups), and emits the leases once all are held — or none.
 *
 * One wait limit covers the set: every key's acquisition counts `waitTimeout` from this
 * subscription. Whatever ends the wait early — a key's `LockTimeoutError` or `LockStoreError`, the
 * loss of a key already taken (`LockLostError`), or an unsubscribe — gives back every key taken so
 * far (each exactly once, in the background, never thrown) and leaves the line of the key being
 * waited for (a grant that arrives anyway is given back by that key's acquisition).
 *
 * States: `taking` (keys 0…n−1 are held, key n is being waited for) → `handed-over` (all held and
 * emitted: the leases are the subscriber's now), or `failed` (errored), or `cancelled`
 * (unsubscribed); {@link SetAcquisition.moveTo} is the one place that changes it.
 */
import { Observable, Subscription, type Subscriber } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import type { WorkLease } from '../lease/WorkLease.js';
import { currentFrame, runInFrame, type Frame } from '../reentrancy/frames.js';
import type { SetKey } from './lockOrder.js';

/** A key of the set, taken: its lease (from the store, or a hold joined from an enclosing stream). */
export interface TakenKey extends SetKey {
  readonly lease: WorkLease;
}

/** One key's acquisition, its wait limit counted from `startedAt` (on the wait clock). */
export type TakeKey = (key: SetKey, startedAt: number) => Observable<WorkLease>;

type State = 'taking' | 'handed-over' | 'failed' | 'cancelled';

/** The moves a set acquisition may make. */
const MOVES: Readonly<Record<State, readonly State[]>> = {
  taking: ['handed-over', 'failed', 'cancelled'],
  'handed-over': [],
  failed: [],
  cancelled: [],
};

export function setAcquisition(keys: readonly SetKey[], take: TakeKey, now: () => number): Observable<readonly TakenKey[]> {
  return new Observable<readonly TakenKey[]>((subscriber) => {
    const acquisition = new SetAcquisition(keys, take, subscriber, now(), currentFrame());
    acquisition.takeNext();
    return () => acquisition.cancel();
  });
}

class SetAcquisition {
  private state: State = 'taking';
  private readonly taken: TakenKey[] = [];
  /** The acquisition of the key being waited for. */
  private current: Subscription | undefined;

  constructor(
    private readonly keys: readonly SetKey[],
    private readonly take: TakeKey,
    private readonly subscriber: Subscriber<readonly TakenKey[]>,
    private readonly startedAt: number,
    /** The subscriber's reentrancy frame: each key is asked for, and every outcome told, in it. */
    private readonly frame: Frame | undefined,
  ) {}

  /** Asks for the next key, or hands the set over once every key is held. */
  takeNext(): void {
    if (this.state !== 'taking') return;
    const index = this.taken.length;
    if (index === this.keys.length) {
      this.moveTo('handed-over');
      // From here on the leases are watched by whoever holds the set.
      for (const { lease } of this.taken) lease.unwatchLoss();
      this.subscriber.next(this.taken.slice());
      this.subscriber.complete();
      return;
    }
    const key = this.keys[index]!;
    // (set before subscribing: a key granted synchronously — a reentrant join — asks for the next
    // one from inside this subscribe, which then owns `current`)
    const current = (this.current = new Subscription());
    let lease: WorkLease | undefined;
    current.add(
      runInFrame(this.frame, () =>
        this.take(key, this.startedAt).subscribe({
          next: (granted) => (lease = granted),
          error: (error: unknown) => this.fail(error),
          complete: () => {
            if (lease === undefined || this.state !== 'taking') return;
            this.taken.push({ ...key, lease });
            lease.watchLoss((error) => this.lost(error));
            this.takeNext();
          },
        }),
      ),
    );
  }

  /** The subscriber left: stop waiting and give back what was taken. */
  cancel(): void {
    if (!this.moveTo('cancelled')) return;
    this.current?.unsubscribe();
    this.giveBack();
  }

  /** A key taken earlier was lost while a later one was waited for: the set cannot be held. */
  private lost(error: LockLostError): void {
    runInFrame(this.frame, () => this.fail(error));
  }

  private fail(error: unknown): void {
    if (!this.moveTo('failed')) return;
    this.current?.unsubscribe();
    this.giveBack();
    this.subscriber.error(error);
  }

  /** Every key taken, the last first; each release runs once and never rejects. */
  private giveBack(): void {
    for (const { lease } of this.taken.splice(0).reverse()) {
      lease.unwatchLoss();
      void lease.release();
    }
  }

  /** The one place the state changes; false (nothing done) when the move is not allowed from here. */
  private moveTo(next: State): boolean {
    if (!MOVES[this.state].includes(next)) return false;
    this.state = next;
    return true;
  }
}
