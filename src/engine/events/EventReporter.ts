/**
 * A locker's `events$`: the one place events are built and emitted. Every report is skipped when
 * nobody listens (`observed`), so an unobserved locker pays nothing for them.
 */
import { Subject, type Observable } from 'rxjs';
import { isLockStoreError, type LockerClosedError, type LockLostError, type LockStoreError } from '../../errors/errors.js';
import type { LockEvent, LongWaitEvent, ReleasedEvent } from './events.js';
import { toldWhereSubscribed } from '../reentrancy/frames.js';

/** What a report about a holder needs to know of it. */
export interface HolderFacts {
  readonly key: string;
  readonly token: string;
  readonly id: string;
  readonly fence: number;
  /** `performance.now()` at the grant. */
  readonly acquiredAt: number;
}

export class EventReporter {
  private readonly subject = new Subject<LockEvent>();
  /**
   * Each subscriber is told in the reentrancy frame it subscribed in (../reentrancy/frames.ts),
   * not in the frame of the engine code that reports: an event is often reported from inside a
   * stream's locked work (a grant of another key, a renewal armed there), and a handler that takes
   * a lock must not join that stream's holds.
   */
  readonly events$: Observable<LockEvent> = toldWhereSubscribed(this.subject.asObservable());

  /** Someone listens: worth building events (and keeping what they need). */
  get observed(): boolean {
    return this.subject.observed;
  }

  acquired(holder: HolderFacts, waitedMs: number, attempts: number, passed: boolean): void {
    if (this.subject.observed)
      this.subject.next({ type: 'acquired', key: holder.key, token: holder.token, id: holder.id, fence: holder.fence, waitedMs, attempts, passed });
  }

  /** `releasedAt`: `performance.now()` when the holder released. */
  released(holder: HolderFacts, releasedAt: number, outcome: ReleasedEvent['outcome']): void {
    if (this.subject.observed)
      this.subject.next({
        type: 'released',
        key: holder.key,
        token: holder.token,
        id: holder.id,
        fence: holder.fence,
        heldMs: releasedAt - holder.acquiredAt,
        outcome,
      });
  }

  releaseFailed(key: string, token: string, error: LockStoreError): void {
    if (this.subject.observed) this.subject.next({ type: 'release-failed', key, token, error });
  }

  abandonedReleased(key: string, token: string, deleted: boolean): void {
    if (this.subject.observed) this.subject.next({ type: 'abandoned-released', key, token, deleted });
  }

  timedOut(key: string, waitedMs: number, attempts: number, skipped = false): void {
    if (this.subject.observed) this.subject.next({ type: 'timed-out', key, waitedMs, attempts, skipped });
  }

  longWait(event: LongWaitEvent): void {
    if (this.subject.observed) this.subject.next(event);
  }

  acquireFailed(key: string, error: unknown, attempts: number): void {
    if (this.subject.observed && isLockStoreError(error)) this.subject.next({ type: 'acquire-failed', key, error, attempts });
  }

  renewed(key: string, token: string, validUntil: number): void {
    if (this.subject.observed) this.subject.next({ type: 'renewed', key, token, validForMs: validUntil - performance.now() });
  }

  renewFailed(key: string, token: string, error: LockStoreError, validUntil: number): void {
    if (this.subject.observed) this.subject.next({ type: 'renew-failed', key, token, error, validForMs: validUntil - performance.now() });
  }

  lost(holder: HolderFacts, error: LockLostError): void {
    if (this.subject.observed)
      this.subject.next({ type: 'lost', key: holder.key, token: holder.token, id: holder.id, fence: holder.fence, reason: error.reason, error });
  }

  closed(key: string, error: LockerClosedError): void {
    if (this.subject.observed) this.subject.next({ type: 'closed', key, error });
  }

  /** Ends `events$` (the locker was closed). */
  complete(): void {
    this.subject.complete();
  }
}
