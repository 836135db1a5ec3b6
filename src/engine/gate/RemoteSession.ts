/**
 * The store side of a key's wait: attempts at the store on behalf of whoever is first in the local
 * line, with one token for the whole session, so the process keeps its place in the store's own
 * line (when the store has one) even as local waiters come and go.
 *
 * Loop: attempt → (held) listen for wake-up → sleep → attempt … until the store grants the key
 * (by answering an attempt, or by a wake-up signal that it handed the key to this token), the
 * local line empties (abandon), or the store fails.
 *
 * Sleeps: the retry policy's jittered back-off while polling; while queued with a live wake-up
 * channel only a slow refresh of the place in line (a third of its lifetime, at most), since the
 * grant comes by signal. Every sleep is capped by the holder's remaining TTL and by what is left of
 * the first waiter's wait, so a lost signal costs at most one step.
 *
 * Cancellation safety: abandoning the session abandons an in-flight attempt; a grant that comes
 * anyway (late answer, or a hand-off while it was leaving the line) is released at once.
 */
import { asyncScheduler, Subscription } from 'rxjs';
import { v4 as uuidv4 } from 'uuid';
import type { RetryPolicy } from '../../options/validate.js';
import type { NotAcquired, StoreWatch, WakeSignal } from '../../store/LockStore.js';
import { backoff, jitteredDelay } from '../backoff.js';
import { callStore, type StoreCall } from '../storeCall.js';
import type { KeyGate } from './KeyGate.js';

export class RemoteSession {
  readonly token = uuidv4();
  private call: StoreCall | undefined;
  private sleep: Subscription | undefined;
  private watch: StoreWatch | undefined;
  /** Send time of the latest attempt answered "queued": a grant came after it. */
  private queuedSentAt: number | undefined;
  /** Lifetime of a place in line, as the store said. */
  private placeTtl: number | undefined;
  /** A grant signal that came while an attempt was in flight. */
  private pendingGrant: WakeSignal | undefined;
  /** The attempt in flight asked for a place in line. */
  private queueing = false;
  private closed = false;

  constructor(private readonly gate: KeyGate) {}

  /**
   * @param contended the key (or this locker) was contended lately: listen for wake-up before the
   * first attempt, so it can take its place in line at once (a locker that meets no contention
   * never subscribes).
   */
  start(contended: boolean): void {
    if (contended && this.gate.canWatch) this.listen();
    this.attempt();
  }

  /** Starts listening for grants; once the channel is live, an attempt can queue. */
  private listen(): void {
    const watch = (this.watch = this.gate.engine.store.watch!(this.gate.storeKey, this.token, this.signalled));
    // Queue as soon as the channel is live, rather than after a whole back-off step.
    if (!watch.active) void watch.ready.then(() => this.wakeNow());
  }

  /** Nobody waits any more: stop, leave the store's line, give back a grant that comes anyway. */
  abandon(): void {
    if (this.closed) return;
    this.close();
    this.leaveLine();
  }

  /** The session failed (store error, time-out, retry policy error): leave the line too. */
  private fail(error: unknown): void {
    this.close();
    this.leaveLine();
    this.gate.sessionFailed(this, error);
  }

  /**
   * Leaves the store's line if this session may be in it — also when the attempt that queues is
   * still in flight or timed out: the leave is sent after it on the same connection, so it finds
   * the place taken — and gives back a key that was handed to it meanwhile. A place left behind
   * would be handed the key, which would then sit idle until the place lapsed.
   */
  private leaveLine(): void {
    const inLine = this.queuedSentAt !== undefined || this.pendingGrant !== undefined || this.queueing;
    this.call?.abandon();
    this.call = undefined;
    const engine = this.gate.engine;
    const { key, storeKey } = this.gate;
    const store = engine.store;
    if (!inLine || store.leave === undefined) return; // without leave, the place lapses by itself
    const giveBackIfGranted = (granted: boolean) => {
      if (granted) engine.releaseAbandoned(key, storeKey, this.token);
    };
    callStore(engine.deadlines, 'release', key, () => store.leave!(storeKey, this.token), {
      value: giveBackIfGranted,
      error: () => undefined, // the place lapses by itself; a grant to it lapses with it
      late: giveBackIfGranted, // answered after commandTimeout (a frozen Redis came back)
    });
  }

  private readonly attempt = (): void => {
    if (this.closed) return;
    const gate = this.gate;
    const head = gate.head();
    if (head === undefined) {
      gate.sessionAbandoned(this);
      return;
    }
    const engine = gate.engine;
    head.attempts++;
    const ttl = head.settings.ttl;
    const wantsToWait = head.remaining(engine.now()) > 0;
    // Queue only where a grant cannot go unnoticed: with a live wake-up channel, or when there is
    // no wake-up at all (the poll then finds the grant).
    const queue = wantsToWait && (this.watch === undefined ? !gate.canWatch || this.queuedSentAt !== undefined : this.watch.active);
    const sentAt = performance.now();
    this.queueing = queue;
    this.call = callStore(engine.deadlines, 'acquire', gate.key, () => engine.store.tryAcquire(gate.storeKey, this.token, ttl, queue), {
      value: (result) => {
        this.call = undefined;
        if (this.closed) return;
        if (result.acquired) this.won(result.fence, sentAt, result.ttl ?? ttl, result.waiting);
        else this.refused(result, sentAt);
      },
      error: (error) => {
        this.call = undefined;
        if (this.closed) return;
        this.fail(error);
      },
      late: (result) => {
        if (result.acquired) engine.releaseAbandoned(gate.key, gate.storeKey, this.token);
      },
    });
  };

  private refused(result: NotAcquired, sentAt: number): void {
    this.queueing = false;
    if (result.queued === true) {
      this.queuedSentAt = sentAt;
      this.placeTtl = result.placeTtl;
    }
    if (this.pendingGrant !== undefined) {
      // A grant signal came while this attempt was in flight, and the attempt found the key not
      // ours. Either the grant came after the attempt ran, or it came before and has lapsed since
      // (another process may hold the key now): no way to tell, so ask again at once. If the key
      // is ours, the store says so, with its TTL and fence, counted from this new attempt.
      this.pendingGrant = undefined;
      this.attempt();
      return;
    }
    const gate = this.gate;
    const engine = gate.engine;
    const now = engine.now();
    gate.expireHeads(now);
    const head = gate.head();
    if (head === undefined) {
      gate.sessionAbandoned(this);
      return;
    }
    engine.noteContention();
    if (this.watch === undefined && gate.canWatch) {
      this.listen();
      // Already live (another waiter of this key listens): take the place in line now.
      if (this.watch!.active && head.remaining(now) > 0) {
        this.attempt();
        return;
      }
    }
    const remaining = head.remaining(now);
    // The holder's key is gone once its remaining TTL has passed (expiry is at now > deadline).
    const cap = Math.min(remaining, result.holderTtl === undefined ? Infinity : result.holderTtl + 1);
    this.wait(head.settings.retry, head.attempts, cap, result.queued === true && this.watch?.active === true);
  }

  /** Sleeps, then attempts again. */
  private wait(policy: RetryPolicy, attempt: number, cap: number, woken: boolean): void {
    const engine = this.gate.engine;
    const current = new Subscription();
    this.sleep = current;
    let due = false;
    let synchronous = true;
    try {
      const place = this.placeTtl;
      const notifier =
        woken && place !== undefined && typeof policy !== 'function'
          ? backoff({ minDelay: jitteredDelay(place / 4, place / 12, engine.random), jitter: 0 }, attempt, Math.max(0, cap), engine.random, engine.scheduler)
          : backoff(policy, attempt, Math.max(0, cap), engine.random, engine.scheduler);
      current.add(
        notifier.subscribe({
          next: () => {
            if (due) return;
            due = true;
            // A notifier that fires during subscribe (`of(0)`) must not chain attempts as
            // microtasks: with a store that answers at once, no timer (not even the holder's
            // release) could ever run. Such attempts go through the scheduler.
            if (synchronous) current.add((engine.scheduler ?? asyncScheduler).schedule(this.attempt));
            else this.attempt();
          },
          error: (error: unknown) => this.fail(error),
          complete: () => {
            if (due) return;
            // A custom retry policy completed without emitting: the first waiter stops waiting.
            this.gate.headGivesUp();
            this.attempt();
          },
        }),
      );
    } catch (error) {
      // The injected random source threw.
      this.fail(error);
    }
    synchronous = false;
  }

  /** Cuts a sleep short and attempts now. */
  private wakeNow(): void {
    if (this.closed || this.call !== undefined || this.sleep === undefined) return;
    this.sleep.unsubscribe();
    this.sleep = undefined;
    this.attempt();
  }

  private readonly signalled = (signal: WakeSignal): void => {
    if (this.closed || signal.token !== this.token) return;
    if (this.call !== undefined) {
      this.pendingGrant = signal;
      return;
    }
    if (this.queuedSentAt === undefined) {
      // No answered "queued" attempt to date the grant from: ask the store.
      this.wakeNow();
      return;
    }
    this.won(signal.fence, this.queuedSentAt, signal.ttl, signal.waiting);
  };

  private won(fence: number, sentAt: number, ttl: number, waiting: number | undefined): void {
    this.close();
    this.gate.sessionWon(this, fence, sentAt, ttl, waiting);
  }

  private close(): void {
    this.closed = true;
    this.sleep?.unsubscribe();
    this.sleep = undefined;
    this.watch?.stop();
  }
}
