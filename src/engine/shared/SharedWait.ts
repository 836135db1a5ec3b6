/**
 * One acquisition of a shared lock (permits of a semaphore, a read or write lock), waiting in the
 * store's line with a token of its own. Unlike a mutex there is no local gate: every acquisition
 * is its own place in the store's first-come, first-served line, so the line is fair across and
 * within processes alike.
 *
 * Loop: attempt (`tryAcquireShared`, keeping the place) → refused: sleep → attempt … until the
 * store answers a grant, the wait is over, the store fails, or the subscriber leaves. The attempt
 * at the wait limit (or when a retry function gives up) also leaves the line (`place: 'leave'`),
 * so a grant that lands just before it is taken, not timed out.
 *
 * Sleeps: while queued with a live wake-up channel (a store with `watch`), a slow refresh of the
 * place (a quarter to a third of its lifetime), since a release that grants this waiter announces
 * it — and the announcement is the grant: when it is dated after the last attempt that kept the
 * place (the store's clock, `at`), the waiter holds at once, with the signal's fence, without
 * asking the store again (as a mutex's waiter does, ../session/StoreSession.ts); otherwise the retry policy's back-off, never longer than a third of the place's lifetime.
 * Every sleep is capped by the end of the first holder's lease (an expired holder frees its
 * permits without any release to announce it) and by what is left of the wait.
 *
 * A grant whose answer arrives after the lease's validity has passed (a store slower than the TTL)
 * is not handed out lost already: as a mutex's gate does, the wait gives the permits back
 * (`releaseShared`, answered before anything else is asked) and attempts again at once — unless the
 * wait is over, which then ends as a time-out. A TTL too short to have any validity is granted as
 * asked.
 *
 * Cancellation safety: abandoning abandons the attempt in flight; once the store settled every call
 * of this wait, one `leaveShared` gives up both its place and permits granted to it meanwhile. A
 * wait that failed (store error, time-out of a call) leaves the same way.
 *
 * States: `attempting` (a call in flight) ⇄ `sleeping`, `attempting` → `returning` (giving a late
 * grant back) → `attempting`, then `granted` (from an answer, from a signal while sleeping, or from
 * a local holder that passed its permits on: ./PermitPasses.ts),
 * `failed` or `abandoned`; {@link SharedWait.moveTo} is the one place that changes the state.
 */
import { Subscription, timer } from 'rxjs';
import { LockTimeoutError, type LockStoreError } from '../../errors/errors.js';
import type { AcquireSettings } from '../../options/validate.js';
import { leaseValidity } from '../../options/validity.js';
import type { StoreWatch, WakeSignal, WakeUpStore } from '../../store/capabilities.js';
import type { AcquireResult, NotAcquired } from '../../store/LockStore.js';
import type { SharedLockStore, SharedPlace } from '../../store/SharedLockStore.js';
import type { StoreAccess } from '../calls/StoreAccess.js';
import type { StoreCall } from '../calls/storeCall.js';
import type { EventReporter } from '../events/EventReporter.js';
import { backoff, jitteredDelay } from '../session/backoff.js';
import type { ContentionMemory } from '../session/ContentionMemory.js';
import { newToken } from '../session/tokens.js';
import type { Clock } from '../timing/Clock.js';

/** What a wait needs of the part that runs the shared locks. */
export interface SharedWaitContext {
  readonly store: SharedLockStore;
  /** Store calls within `commandTimeout`. */
  readonly access: StoreAccess;
  /** The store's wake-up signals, if it has them. */
  readonly wakeUp: WakeUpStore | undefined;
  readonly clock: Clock;
  readonly events: EventReporter;
  /** Whether the locker's shared locks met contention lately (shared by its waits). */
  readonly contention: ContentionMemory;
}

/** What a grant tells the lease. */
export interface SharedGrant {
  readonly fence: number;
  /** Fences the grant reserved from `fence` on (the holder's and its local successors'). */
  readonly fences: number;
  /** Others in the store's line at the grant, when the store says. */
  readonly waiting: number | undefined;
  /** The TTL the permits have, counted from `sentAt`. */
  readonly ttl: number;
  /** `performance.now()` when the call that answered the grant was sent. */
  readonly sentAt: number;
}

export interface SharedWaitCallbacks {
  granted(grant: SharedGrant): void;
  failed(error: unknown): void;
  /** How many fences a store grant should reserve (1 when absent). */
  fences?(): number;
}

type State = 'attempting' | 'sleeping' | 'returning' | 'granted' | 'failed' | 'abandoned';

/** The last attempt the store answered "queued": when it was sent, and the store's clock then. */
interface Place {
  /** `performance.now()` when that attempt was sent. */
  readonly sentAt: number;
  /** How long the place lasts without a refresh, as the store said. */
  readonly placeTtl: number;
  /** The store's clock when it kept the place, if it says. */
  readonly at: number | undefined;
  /**
   * The wake-up channel was live when that attempt was sent: a grant made after it is announced
   * to this wait. (A place kept before the listener was there may have been granted unheard.)
   */
  readonly heard: boolean;
}

const MOVES: Readonly<Record<State, readonly State[]>> = {
  attempting: ['attempting', 'sleeping', 'returning', 'granted', 'failed', 'abandoned'],
  sleeping: ['attempting', 'granted', 'failed', 'abandoned'],
  returning: ['attempting', 'granted', 'failed', 'abandoned'],
  granted: [],
  failed: [],
  abandoned: [],
};

export class SharedWait {
  readonly token = newToken();
  /** Store attempts made (what `LockTimeoutError.attempts` and `acquired` events report). */
  attempts = 0;
  private state: State = 'attempting';
  private call: StoreCall | undefined;
  /** Calls the store has not settled yet (even ones this wait stopped waiting for). */
  private unsettled = 0;
  /** A call was sent: the store may hold a place or permits for this token. */
  private sent = false;
  /** Give the place and any permits back once every call settled. */
  private mustLeave = false;
  private sleep: Subscription | undefined;
  private watch: StoreWatch | undefined;
  /** A wake-up came while an attempt was in flight: look again at once if it is refused. */
  private wokenMeanwhile = false;
  /** The retry policy gave up: the next attempt is the last. */
  private lastAttempt = false;
  private placeTtl = Infinity;
  /** The place the last answered attempt kept, if it kept one. */
  private place: Place | undefined;

  constructor(
    private readonly ctx: SharedWaitContext,
    readonly key: string,
    readonly storeKey: string,
    readonly settings: AcquireSettings,
    readonly weight: number,
    readonly capacity: number,
    /** On the wait clock. */
    readonly startedAt: number,
    private readonly callbacks: SharedWaitCallbacks,
  ) {}

  get done(): boolean {
    return this.state === 'granted' || this.state === 'failed' || this.state === 'abandoned';
  }

  /**
   * @param contended the locker's shared locks were contended lately: listen for wake-up before
   * the first attempt, so a place it keeps is heard from the start (a locker that meets no
   * contention never subscribes).
   */
  start(contended = false): void {
    if (contended) this.listen();
    this.attempt();
  }

  /** Nobody wants the permits any more (unsubscribed): stop, and give back what the store kept. */
  abandon(): void {
    if (this.done) return;
    this.moveTo('abandoned');
    this.stop();
    this.leaveWhenSettled();
  }

  /**
   * Permits came another way (a local holder passed its own on): stop, and give back the place and
   * any permits the store granted meanwhile.
   */
  passedOn(): void {
    if (this.done) return;
    this.moveTo('granted');
    this.stop();
    this.leaveWhenSettled();
  }

  /** Ends the wait with `error` (the locker is closing): the place and any permits are given back. */
  fail(error: unknown): void {
    if (this.done) return;
    this.moveTo('failed');
    this.stop();
    this.leaveWhenSettled();
    this.callbacks.failed(error);
  }

  private moveTo(next: State): void {
    if (!MOVES[this.state].includes(next)) throw new Error(`rxjs-lock: a shared wait cannot go from ${this.state} to ${next}`);
    this.state = next;
  }

  private readonly attempt = (): void => {
    // (one call at a time: a wake-up and a sleep's end can both ask for the next attempt)
    if (this.done || this.call !== undefined) return;
    this.moveTo('attempting');
    this.sleep = undefined;
    const { ctx, settings } = this;
    const place: SharedPlace = this.lastAttempt || this.remaining() <= 0 ? 'leave' : 'keep';
    this.attempts++;
    const sentAt = performance.now();
    const { storeKey, token, weight, capacity } = this;
    const heard = this.watch?.active === true;
    const fences = this.callbacks.fences?.() ?? 1;
    this.sent = true;
    this.unsettled++;
    this.call = ctx.access.call(
      'acquire',
      this.key,
      () => ctx.store.tryAcquireShared(storeKey, token, settings.ttl, weight, capacity, place, fences),
      {
        value: (result: AcquireResult) => {
          this.call = undefined;
          if (this.state !== 'attempting') return;
          if (!result.acquired) this.refused(result, place, sentAt, heard);
          else {
            // (an answer that does not say how many fences the grant reserved is of one: a shared
            // store may leave `fences` out only then — one written before permits passed on ignores
            // the count asked for, and fences it never reserved must not go to local successors)
            const grant = { fence: result.fence, fences: result.fences ?? 1, waiting: result.waiting, ttl: result.ttl ?? settings.ttl, sentAt };
            if (this.answeredTooLate(grant)) this.returnLate(place);
            else this.won(grant);
          }
        },
        error: (error: LockStoreError) => {
          this.call = undefined;
          if (this.state !== 'attempting') return;
          this.ctx.events.acquireFailed(this.key, error, this.attempts);
          this.fail(error);
        },
        settled: () => {
          if (--this.unsettled === 0 && this.mustLeave) this.leave();
        },
      },
      sentAt,
    );
  };

  private won(grant: SharedGrant): void {
    this.moveTo('granted');
    this.stop();
    this.callbacks.granted(grant);
  }

  /**
   * The grant's validity (counted from the attempt's sending) had passed when its answer came —
   * and the asked-for TTL has some validity to give, so asking again can do better.
   */
  private answeredTooLate(grant: SharedGrant): boolean {
    return performance.now() >= grant.sentAt + leaseValidity(grant.ttl) && leaseValidity(this.settings.ttl) > 0;
  }

  /**
   * Gives a grant that came too late back, then attempts again at once (the release answered
   * first, so the next attempt cannot overtake it) — or, when that was the last attempt or the wait
   * is over, times out. A release that fails ends the wait with its `LockStoreError`.
   */
  private returnLate(place: SharedPlace): void {
    this.moveTo('returning');
    const { ctx, key, storeKey, token } = this;
    this.unsettled++;
    this.call = ctx.access.call('release', key, () => ctx.store.releaseShared(storeKey, token), {
      value: () => {
        this.call = undefined;
        if (this.state !== 'returning') return;
        if (place === 'leave' || this.remaining() <= 0) this.timedOut();
        else this.attempt();
      },
      error: (error: LockStoreError) => {
        this.call = undefined;
        if (this.state !== 'returning') return;
        ctx.events.releaseFailed(key, token, error);
        this.fail(error);
      },
      settled: () => {
        if (--this.unsettled === 0 && this.mustLeave) this.leave();
      },
    });
  }

  /** The wait is over without a grant (the last attempt left the line, or a late grant went back). */
  private timedOut(): void {
    const waited = this.ctx.clock.now() - this.startedAt;
    this.ctx.events.timedOut(this.key, waited, this.attempts, this.settings.skip === true);
    this.moveTo('failed');
    this.stop();
    this.callbacks.failed(new LockTimeoutError(this.key, waited, this.attempts));
  }

  private refused(result: NotAcquired, place: SharedPlace, sentAt: number, heard: boolean): void {
    if (place === 'leave') {
      // The last attempt left the line in the same step: the wait is over.
      this.timedOut();
      return;
    }
    this.placeTtl = result.queued === true ? (result.placeTtl ?? Infinity) : Infinity;
    this.place = result.queued === true ? { sentAt, placeTtl: this.placeTtl, at: result.at, heard } : undefined;
    this.ctx.contention.note();
    if (this.wokenMeanwhile) {
      this.wokenMeanwhile = false;
      this.attempt();
      return;
    }
    this.listen();
    if (this.watch?.active === true && this.place?.heard === false && typeof this.settings.retry !== 'function') {
      // The channel is live already (another wait of this store listens) but the place was kept
      // before this wait listened: a grant made since was announced to nobody. Look now, heard —
      // not a whole step of the retry policy later. (A retry function decides every attempt.)
      this.attempt();
      return;
    }
    this.sleepThenAttempt(result.holderTtl);
  }

  /** Starts listening for wake-up signals, if the store has them and this wait does not yet. */
  private listen(): void {
    if (this.watch !== undefined || this.ctx.wakeUp === undefined) return;
    this.watch = this.ctx.wakeUp.watch(this.storeKey, this.token, this.signalled);
    // Once the channel is live, a slow refresh replaces the poll: attempt then (an attempt sent
    // with the channel live is heard). If it is live already, `refused` looks at once at a place
    // kept unheard.
    if (!this.watch.active) void this.watch.ready.then(() => this.wakeNow());
  }

  /** What is left of the wait (may be ≤ 0, or Infinity). */
  private remaining(): number {
    return this.settings.waitTimeout - (this.ctx.clock.now() - this.startedAt);
  }

  private sleepThenAttempt(holderTtl: number | undefined): void {
    this.moveTo('sleeping');
    const { clock } = this.ctx;
    const policy = this.settings.retry;
    // The first holder's lease ends by then (an expiry frees permits unannounced); the place must
    // be refreshed well before it lapses; the wait ends at the wait limit.
    let cap = Math.max(0, Math.min(this.remaining(), holderTtl === undefined ? Infinity : holderTtl + 1, this.placeTtl / 3));
    const sleep = new Subscription();
    this.sleep = sleep;
    let due = false;
    try {
      // (only for a place kept while the channel was live: one kept before may have been granted
      // unheard, so the policy's next attempt — sent with the channel live — looks first)
      const signalled = this.watch?.active === true && this.place?.heard === true && Number.isFinite(this.placeTtl) && typeof policy !== 'function';
      if (signalled) cap = Math.min(cap, jitteredDelay(this.placeTtl / 4, this.placeTtl / 12, clock.random));
      const notifier = signalled
        ? clock.scheduler
          ? timer(cap, clock.scheduler)
          : timer(cap)
        : backoff(policy, this.attempts, cap, clock.random, clock.scheduler);
      sleep.add(
        notifier.subscribe({
          next: () => {
            if (due) return;
            due = true;
            sleep.unsubscribe();
            // (through the scheduler: a notifier that fires at once must not loop synchronously)
            if (this.sleep === sleep) this.sleep = clock.timers.schedule(this.attempt);
          },
          error: (error: unknown) => this.fail(error),
          complete: () => {
            if (due) return;
            due = true;
            // A retry function completed without emitting: one last attempt, which leaves the line.
            this.lastAttempt = true;
            sleep.unsubscribe();
            if (this.sleep === sleep) this.sleep = clock.timers.schedule(this.attempt);
          },
        }),
      );
    } catch (error) {
      this.fail(error); // the injected random source threw
    }
  }

  /** Cuts a sleep short: attempt now (a wake-up came). */
  private wakeNow(): void {
    if (this.state === 'attempting') this.wokenMeanwhile = true;
    if (this.state !== 'sleeping') return;
    this.sleep?.unsubscribe();
    this.sleep = undefined;
    this.attempt();
  }

  private readonly signalled = (signal: WakeSignal): void => {
    // The channel dropping or coming back (a grant may have gone unannounced): look now.
    if (signal.type === 'behind') return;
    if (signal.type !== 'granted') {
      this.wakeNow();
      return;
    }
    if (signal.token !== this.token) return;
    const place = this.place;
    if (this.state !== 'sleeping' || place === undefined || signal.at === undefined || place.at === undefined || signal.at <= place.at) {
      // An attempt in flight (its answer decides), or no way to tell that the grant came after the
      // last attempt that kept the place (signals travel apart from answers: a late one may be of a
      // grant that had lapsed by then): ask the store.
      this.wakeNow();
      return;
    }
    // Every attempt was answered, and the last one kept the place before the grant: the grant
    // lasts at least min(place TTL, ttl asked) from the moment that attempt was sent (a grant from
    // the line ends when the place would have lapsed, or after the TTL the place asked for). If
    // that leaves it no validity now, the store says what it has left (its answer decides).
    const grant = {
      fence: signal.fence,
      fences: signal.fences,
      waiting: signal.waiting,
      ttl: Math.min(place.placeTtl, this.settings.ttl),
      sentAt: place.sentAt,
    };
    if (this.answeredTooLate(grant)) this.wakeNow();
    else this.won(grant);
  };

  private stop(): void {
    this.sleep?.unsubscribe();
    this.sleep = undefined;
    this.watch?.stop();
    this.watch = undefined;
    this.call?.abandon();
    this.call = undefined;
  }

  /** Gives the place and any permits back, once the store settled every call of this wait. */
  private leaveWhenSettled(): void {
    if (!this.sent) return;
    this.mustLeave = true;
    if (this.unsettled === 0) this.leave();
  }

  private leave(): void {
    this.mustLeave = false;
    const { ctx, key, storeKey, token } = this;
    const gaveBack = (had: boolean) => {
      if (had) ctx.events.abandonedReleased(key, token, true);
    };
    ctx.access.call('leave', key, () => ctx.store.leaveShared(storeKey, token), { value: gaveBack, late: gaveBack, error: () => undefined });
  }
}
