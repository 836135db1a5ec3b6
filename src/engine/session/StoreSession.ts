/**
 * The store side of a key's wait: attempts at the store on behalf of whoever is first in the local
 * line, with one token for the whole session, so the process keeps its place in the store's own
 * line (when the store has one) even as local waiters come and go.
 *
 * Loop: attempt → (held) listen for wake-up → sleep → attempt … until the store grants the key
 * (by answering an attempt, or by a wake-up signal that it handed the key to this token), the
 * local line empties (abandon), or the store fails.
 *
 * Sleeps: the retry policy's back-off while polling; while queued with a live wake-up channel only
 * a slow refresh of the place in line (a quarter to a third of its lifetime), since the grant comes
 * by signal. Every sleep is capped by the holder's remaining TTL and by what is left of the first
 * waiter's wait, so a lost signal costs at most one step. A place in line is refreshed before it
 * lapses even when the retry policy sleeps longer (such a refresh is not one of the policy's
 * attempts).
 *
 * The end of a wait in line: the attempt at the wait limit also leaves the line, atomically, so a
 * release that handed the key over just before it is taken rather than timed out and handed back.
 *
 * Cancellation safety: abandoning the session abandons an in-flight attempt; a grant that comes
 * anyway (a late answer, or a hand-off while it was leaving the line) is released at once. The
 * call that leaves the line is sent only once the in-flight attempt has been answered, so the
 * store runs it after that attempt even when the attempt had to be re-sent (a Redis that lost its
 * script cache): a place cannot come back after the leave.
 */
import { asyncScheduler, Subscription, type SchedulerAction } from 'rxjs';
import type { RetryPolicy } from '../../options/validate.js';
import type { WakeSignal, StoreWatch, LeaveResult, WakeUpStore } from '../../store/capabilities.js';
import type { AcquireResult, NotAcquired } from '../../store/LockStore.js';
import type { LockStoreError } from '../../errors/errors.js';
import type { StoreCall, StoreRequest } from '../calls/storeCall.js';
import { backoff, jitteredDelay } from './backoff.js';
import { newToken } from './tokens.js';
import type { Grant, SessionContext, SessionOwner } from './SessionOwner.js';

/** The last attempt the store answered "queued": what the place asked for, and when. */
interface Place {
  /** `performance.now()` when that attempt was sent. */
  readonly sentAt: number;
  readonly ttl: number;
  readonly fences: number;
  /** How long the place lasts without a refresh, as the store said. */
  readonly placeTtl: number;
  /** The store's clock when it kept the place, if it says. */
  readonly at: number | undefined;
}

/** How an attempt asks the store. */
type Mode = 'try' | 'keep' | 'leave';

export class StoreSession {
  readonly token = newToken();
  /** The attempt in flight, until answered in time (or abandoned). */
  private call: StoreCall | undefined;
  /** Calls the store has not settled yet (even ones the engine stopped waiting for). */
  private unsettled = 0;
  /** Runs once the store settles the last call (a leave that must come after it). */
  private afterSettled: (() => void) | undefined;
  /** An attempt answered after nobody wanted it was a grant (given back already). */
  private lateGrant = false;
  /** A direct attempt failed or timed out: give the key back by token once the store settles it. */
  private giveBackWhenSettled = false;
  private sleep: Subscription | undefined;
  /** The sleep is the slow refresh of a place woken by signals (not the retry policy's). */
  private slowSleep = false;
  /** A refresh of the place, due while the retry policy sleeps longer than the place lasts. */
  private refreshTimer: Subscription | undefined;
  /** The retry policy's notifier fired (`'attempt'`) or completed (`'stop'`) while a refresh was in flight. */
  private afterRefresh: 'attempt' | 'stop' | undefined;
  private watch: StoreWatch | undefined;
  private place: Place | undefined;
  /** A grant signal that came while an attempt was in flight. */
  private pendingGrant = false;
  /** The attempt in flight may have taken a place in line. */
  private queueing = false;
  /** Attempts go through the store's line (after a first refusal, or from the start when contended). */
  private inLine = false;
  private closed = false;

  constructor(
    private readonly owner: SessionOwner,
    private readonly ctx: SessionContext,
  ) {}

  /**
   * @param contended the key (or this locker) was contended lately: listen for wake-up before the
   * first attempt and queue with it (a locker that meets no contention never subscribes).
   * @param gaveBackAt when this locker last gave the key back to a store that has no line while
   * other processes were after it (undefined: not lately, or the store has a line). Within one
   * back-off step of that, the first attempt waits one back-off step of the retry policy, as the
   * other processes' waiters do between theirs, so that one of them can take the key: this
   * process, asking at once, would take it again nearly every time, and a busy key would starve
   * them. Not with a retry function, which decides when attempts are made.
   */
  start(contended: boolean, gaveBackAt?: number): void {
    if (contended && this.ctx.access.queue !== undefined) {
      this.inLine = true;
      if (this.ctx.access.wakeUp !== undefined) this.listen();
    }
    if (gaveBackAt !== undefined) {
      const head = this.owner.head();
      const retry = head?.settings.retry;
      if (head !== undefined && retry !== undefined && typeof retry !== 'function') {
        const now = this.ctx.clock.now();
        const left = head.remaining(now);
        if (now - gaveBackAt < retry.minDelay + retry.jitter && left > 0) {
          this.wait(retry, head.attempts, left, false);
          return;
        }
      }
    }
    this.attempt();
  }

  /** Nobody waits any more: stop, leave the store's line, give back a grant that comes anyway. */
  abandon(): void {
    if (this.closed) return;
    this.close();
    this.leaveLine();
  }

  /** The session failed (store error, retry policy error): leave the line too. */
  private fail(error: unknown): void {
    this.close();
    this.leaveLine();
    this.owner.failed(this, error);
  }

  /** Starts listening for grants; once the channel is live, an attempt can count on signals. */
  private listen(): void {
    const wakeUp = this.ctx.access.wakeUp!;
    const watch = (this.watch = wakeUp.watch(this.owner.storeKey, this.token, (signal) => this.signalled(signal)));
    // Re-plan as soon as the channel is live, rather than after a whole back-off step.
    if (!watch.active) void watch.ready.then(() => this.replanSleep());
  }

  /**
   * A store without a line that hints when a key is free: listens for the hints to this token
   * (the store hints the acquisition refused last when the key is given back). The polling goes
   * on as before; a hint only cuts a sleep short.
   */
  private listenForHints(hints: WakeUpStore): void {
    this.watch = hints.watch(this.owner.storeKey, this.token, (signal) => {
      if (signal.type === 'freed' && signal.token === this.token && !this.closed && typeof this.owner.head()?.settings.retry !== 'function') this.wakeNow();
    });
  }

  /**
   * The wake-up channel came up, dropped or came back: a sleep chosen for the old state (a slow
   * refresh of the place, or a poll) is cut short and chosen again. Not when a retry function
   * decides when each attempt is made: its sleeps do not depend on the channel.
   */
  private replanSleep(): void {
    if (typeof this.owner.head()?.settings.retry === 'function') return;
    this.wakeNow();
  }

  // (attempt, callSettled and signalled are methods, not arrow fields: a session per acquisition
  // would allocate three closures that only contention, a leave or a wake-up channel needs.)
  private attempt(): void {
    this.attemptNow(false);
  }

  /**
   * One attempt for the first waiter. A `refresh` only renews the place in line while the retry
   * policy sleeps: it is not counted as an attempt and does not end the sleep unless it wins.
   */
  private attemptNow(refresh: boolean): void {
    if (this.closed) return;
    const owner = this.owner;
    const head = owner.head();
    if (head === undefined) {
      this.close();
      this.leaveLine();
      owner.emptied(this);
      return;
    }
    const ctx = this.ctx;
    if (!refresh) head.attempts++;
    const ttl = head.settings.ttl;
    const fences = owner.fencesWanted();
    const queue = ctx.access.queue;
    // In line: keep the place while the wait goes on; the attempt at the wait limit leaves it.
    const mode: Mode =
      queue === undefined || !this.inLine ? 'try' : head.remaining(ctx.clock.now()) > 0 ? 'keep' : this.place !== undefined || this.queueing ? 'leave' : 'try';
    this.queueing = mode === 'keep';
    this.unsettled++;
    const sentAt = performance.now();
    this.call = ctx.access.send('acquire', owner.key, new Attempt(this, mode, ttl, fences, sentAt, refresh), sentAt);
  }

  // ─── an attempt's call (see Attempt) ─────────────────────────────────────────────────────────

  /** Sends `attempt` to the store. */
  sendAttempt(attempt: Attempt): Promise<AcquireResult> {
    const { storeKey } = this.owner;
    const access = this.ctx.access;
    return attempt.mode === 'try'
      ? access.store.tryAcquire(storeKey, this.token, attempt.ttl, attempt.fences)
      : access.queue!.tryAcquireInLine(storeKey, this.token, attempt.ttl, attempt.fences, attempt.mode);
  }

  /** The store answered `attempt` in time. */
  attemptAnswered(attempt: Attempt, result: AcquireResult): void {
    this.call = undefined;
    if (this.closed) return;
    if (result.acquired) {
      this.won(result.fence, result.fences ?? attempt.fences, attempt.sentAt, result.ttl ?? attempt.ttl, result.waiting, result.validity);
      return;
    }
    this.refused(result, attempt.sentAt, attempt.mode, attempt.ttl, attempt.fences, attempt.refresh);
  }

  /** `attempt` failed or timed out. */
  attemptFailed(attempt: Attempt, error: LockStoreError): void {
    this.call = undefined;
    // Failed or timed out: the store may have run it all the same (its answer lost with the
    // connection, or still to come). A direct attempt leaves no place to leave, so once the
    // store settled it the key is given back by token (harmless if it is not ours).
    if (attempt.mode === 'try') this.giveBackWhenSettled = true;
    if (this.closed) return;
    this.fail(error);
  }

  /** An attempt answered after nobody waited for it (timed out or abandoned): a grant is given back. */
  attemptAnsweredLate(result: AcquireResult): void {
    if (!result.acquired) return;
    this.lateGrant = true;
    this.ctx.giveBack(this.owner.key, this.owner.storeKey, this.token);
  }

  /** The store settled an attempt (in time or not). */
  attemptSettled(): void {
    if (this.giveBackWhenSettled && !this.lateGrant) this.ctx.giveBack(this.owner.key, this.owner.storeKey, this.token, true);
    this.giveBackWhenSettled = false;
    this.callSettled();
  }

  private refused(result: NotAcquired, sentAt: number, mode: Mode, ttl: number, fences: number, refresh: boolean): void {
    this.queueing = false;
    if (result.queued === true) this.place = { sentAt, ttl, fences, placeTtl: result.placeTtl ?? Infinity, at: result.at };
    else if (mode !== 'try') this.place = undefined; // left the line (or the store kept no place)
    if (this.pendingGrant) {
      // A grant signal came while this attempt was in flight, and the attempt found the key not
      // ours. Either the grant came after the attempt ran, or it came before and has lapsed since
      // (another process may hold the key now): no way to tell, so ask again at once. If the key
      // is ours, the store says so, with its TTL and fence, counted from this new attempt.
      this.pendingGrant = false;
      this.attempt();
      return;
    }
    const owner = this.owner;
    const ctx = this.ctx;
    ctx.contention.note();
    if (refresh) {
      // Only the place was renewed; the policy's sleep goes on (or ended meanwhile).
      const then = this.afterRefresh;
      this.afterRefresh = undefined;
      if (then === 'attempt') this.attempt();
      else if (then === 'stop') this.policyStopped();
      else this.armRefresh();
      return;
    }
    if (ctx.access.queue !== undefined) this.inLine = true;
    const now = ctx.clock.now();
    let head = owner.head();
    if (mode === 'keep' && this.place !== undefined && head !== undefined && head.remaining(now) <= 0 && owner.behind === 0) {
      // The wait is over while in line: the last attempt also leaves the line, so a hand-off that
      // comes just before it is taken instead of timed out and handed back.
      this.attempt();
      return;
    }
    owner.expireHeads(now);
    head = owner.head();
    if (head === undefined) {
      this.close();
      this.leaveLine();
      owner.emptied(this);
      return;
    }
    if (ctx.access.hints !== undefined) {
      // (a retry function keeps its own pace: its waiter listens for no hints, and opens no channel)
      if (this.watch === undefined && typeof head.settings.retry !== 'function') this.listenForHints(ctx.access.hints);
    } else if (this.watch === undefined && ctx.access.wakeUp !== undefined) {
      this.listen();
      // Already live (another waiter of this store listens): take the place in line now — unless
      // a retry function decides when each attempt is made.
      if (this.watch!.active && head.remaining(now) > 0 && this.place === undefined && typeof head.settings.retry !== 'function') {
        this.attempt();
        return;
      }
    }
    const remaining = head.remaining(now);
    // The holder's key is gone once its remaining TTL has passed (expiry is at now > deadline).
    const cap = Math.min(remaining, result.holderTtl === undefined ? Infinity : result.holderTtl + 1);
    this.wait(head.settings.retry, head.attempts, cap, this.place !== undefined && this.watch?.active === true);
  }

  /** Sleeps, then attempts again. */
  private wait(policy: RetryPolicy, attempt: number, cap: number, woken: boolean): void {
    const ctx = this.ctx;
    const clock = ctx.clock;
    this.sleep?.unsubscribe(); // (a sleep cut short by a refresh's answer is never left running)
    const current = new Subscription();
    this.sleep = current;
    let due = false;
    let synchronous = true;
    try {
      const place = this.place;
      // Woken by signals, only a slow refresh of the place is needed — unless a retry function
      // decides when attempts are made.
      const slowRefresh = woken && place !== undefined && typeof policy !== 'function';
      this.slowSleep = slowRefresh;
      const notifier = slowRefresh
        ? backoff(
            { minDelay: jitteredDelay(place.placeTtl / 4, place.placeTtl / 12, clock.random), jitter: 0 },
            attempt,
            Math.max(0, cap),
            clock.random,
            clock.scheduler,
          )
        : backoff(policy, attempt, Math.max(0, cap), clock.random, clock.scheduler);
      current.add(
        notifier.subscribe({
          next: () => {
            if (due) return;
            due = true;
            this.cancelRefresh();
            if (this.call !== undefined) {
              // A refresh of the place is in flight: attempt once it is answered.
              this.afterRefresh = 'attempt';
              return;
            }
            // A notifier that fires during subscribe (`of(0)`) must not chain attempts as
            // microtasks: with a store that answers at once, no timer (not even the holder's
            // release) could ever run. Such attempts go through the scheduler.
            if (synchronous) current.add((clock.scheduler ?? asyncScheduler).schedule(() => this.attempt()));
            else this.attempt();
          },
          error: (error: unknown) => this.fail(error),
          complete: () => {
            if (due) return;
            due = true;
            // A custom retry policy completed without emitting: the first waiter stops waiting.
            this.cancelRefresh();
            if (this.call !== undefined) this.afterRefresh = 'stop';
            else this.policyStopped();
          },
        }),
      );
      if (!due && !slowRefresh) {
        // The policy's sleep may outlast the place: keep it fresh meanwhile. A retry function's
        // sleeps are unknown, so such a waiter takes its place in line at once (fair to those
        // who come later); neither counts as one of the policy's attempts.
        if (this.place !== undefined) {
          if (this.mayOutsleepPlace(policy)) this.armRefresh();
        } else if (typeof policy === 'function' && this.inLine && ctx.access.queue !== undefined) this.attemptNow(true);
      }
    } catch (error) {
      // The injected random source threw.
      this.fail(error);
    }
    synchronous = false;
  }

  /**
   * The first waiter's retry policy stopped. If it was the last waiter and the session is in the
   * store's line, the line is left first, and a grant that reached it meanwhile is taken.
   */
  private policyStopped(): void {
    const owner = this.owner;
    const queue = this.ctx.access.queue;
    if (owner.behind > 0 || queue === undefined || (this.place === undefined && !this.queueing)) {
      owner.headGivesUp();
      this.attempt();
      return;
    }
    const { key, storeKey } = owner;
    const token = this.token;
    const sentAt = performance.now();
    // From here the session is out of line whatever happens: an abandon must not leave again.
    this.place = undefined;
    this.queueing = false;
    this.unsettled++;
    this.call = this.ctx.access.call('leave', key, () => queue.leave(storeKey, token), {
      value: (left: LeaveResult) => {
        this.call = undefined;
        this.pendingGrant = false; // the leave's answer says whether the key is ours
        if (this.closed) {
          if (left.granted) this.ctx.giveBack(key, storeKey, token);
          return;
        }
        if (left.granted) this.won(left.fence, left.fences, sentAt, left.ttl, undefined);
        else {
          owner.headGivesUp();
          this.attempt();
        }
      },
      error: (error) => {
        this.call = undefined;
        if (!this.closed) this.fail(error);
      },
      late: (left) => {
        if (left.granted) this.ctx.giveBack(key, storeKey, token);
      },
      settled: () => this.callSettled(),
    });
  }

  /** Could a sleep of `policy` outlast a third of the place's lifetime? */
  private mayOutsleepPlace(policy: RetryPolicy): boolean {
    const place = this.place;
    if (place === undefined) return false;
    return typeof policy === 'function' || policy.minDelay + policy.jitter > place.placeTtl / 3;
  }

  /** The store settled one of this session's calls: once none is left, what must follow them goes out. */
  private callSettled(): void {
    if (--this.unsettled > 0) return;
    const next = this.afterSettled;
    this.afterSettled = undefined;
    next?.();
  }

  /** Refreshes the place in line before it lapses while the retry policy sleeps longer. */
  private armRefresh(): void {
    const place = this.place;
    if (place === undefined || !Number.isFinite(place.placeTtl) || this.closed) return;
    this.cancelRefresh();
    const clock = this.ctx.clock;
    const delay = Math.max(1, Math.floor(place.placeTtl / 3));
    this.refreshTimer = (clock.scheduler ?? asyncScheduler).schedule(
      function (this: SchedulerAction<StoreSession>, session) {
        session!.refreshTimer = undefined;
        if (session!.call === undefined && !session!.closed) session!.attemptNow(true);
      },
      delay,
      this,
    );
  }

  private cancelRefresh(): void {
    this.refreshTimer?.unsubscribe();
    this.refreshTimer = undefined;
  }

  /** The first waiter changed: attempt now, so the next sleep is capped by the new one's wait. */
  replan(): void {
    this.wakeNow();
  }

  /** Cuts a sleep short: attempts within `ms` instead. */
  private wakeWithin(ms: number): void {
    // Only a slow refresh is cut short: the retry policy's own sleeps are its to choose.
    if (this.closed || this.call !== undefined || this.sleep === undefined || !this.slowSleep) return;
    this.slowSleep = false;
    this.sleep.unsubscribe();
    this.cancelRefresh();
    const clock = this.ctx.clock;
    this.sleep = (clock.scheduler ?? asyncScheduler).schedule(() => this.attempt(), Math.max(0, ms)) as unknown as Subscription;
  }

  /** Cuts a sleep short and attempts now. */
  private wakeNow(): void {
    if (this.closed || this.call !== undefined || this.sleep === undefined) return;
    this.sleep.unsubscribe();
    this.sleep = undefined;
    this.cancelRefresh();
    this.attempt();
  }

  private signalled(signal: WakeSignal): void {
    if (this.closed) return;
    if (signal.type === 'behind') {
      // The waiter ahead was handed the key for at most `ttl` ms: if it never claims it (it
      // died), the key is this session's to take then, so look by then.
      if (signal.token === this.token) this.wakeWithin(signal.ttl + 1);
      return;
    }
    if (signal.type !== 'granted') {
      // The channel dropped or came back: re-plan the sleep (poll while it is down; a grant made
      // while it was down was not signalled, so look now).
      this.replanSleep();
      return;
    }
    if (signal.token !== this.token) return;
    if (this.call !== undefined) {
      this.pendingGrant = true;
      return;
    }
    const place = this.place;
    if (place === undefined || signal.at === undefined || place.at === undefined || signal.at <= place.at) {
      // No answered "queued" attempt to date the grant from, or no way to tell that the signal is
      // newer than it (signals travel on their own connection: a late one may be of a hand-off
      // that had lapsed when that attempt ran and found the key not ours): ask the store.
      this.wakeNow();
      return;
    }
    // Every attempt was answered, so the last refresh before the grant was `place`: the key's TTL
    // is at least min(place TTL, ttl asked) from the moment it was sent.
    this.won(signal.fence, signal.fences, place.sentAt, Math.min(place.placeTtl, place.ttl), signal.waiting);
  }

  private won(fence: number, fences: number, sentAt: number, ttl: number, waiting: number | undefined, validity?: number): void {
    this.close();
    this.place = undefined;
    this.owner.won(this, new StoreGrant(fence, fences, sentAt, ttl, waiting, validity));
  }

  private close(): void {
    this.closed = true;
    this.sleep?.unsubscribe();
    this.sleep = undefined;
    this.cancelRefresh();
    this.watch?.stop();
  }

  /**
   * Leaves the store's line if this session may be in it (also when the attempt that queues is
   * still in flight or timed out), and gives back a key that was handed to it meanwhile. A place
   * left behind would be handed the key, which would then sit idle until the place lapsed. The
   * leave goes out only once the store settled the last attempt, so it runs after it.
   */
  private leaveLine(): void {
    const inLine = this.place !== undefined || this.pendingGrant || this.queueing;
    this.call?.abandon();
    this.call = undefined;
    const queue = this.ctx.access.queue;
    if (!inLine || queue === undefined) return; // without a line there is nothing to leave
    const send = () => {
      if (this.lateGrant) return; // the late answer was the grant, and it was given back
      const { key, storeKey } = this.owner;
      const token = this.token;
      const giveBackIfGranted = (left: LeaveResult) => {
        if (left.granted) this.ctx.giveBack(key, storeKey, token);
      };
      this.ctx.access.call('leave', key, () => queue.leave(storeKey, token), {
        value: giveBackIfGranted,
        error: () => undefined, // the place lapses by itself; a grant to it lapses with it
        late: giveBackIfGranted, // answered after commandTimeout (a frozen Redis came back)
      });
    };
    if (this.unsettled > 0) this.afterSettled = send;
    else send();
  }
}

/**
 * One attempt of a session, as its store call (see ../calls/storeCall.ts): what it asked for and
 * when it was sent; the session sends it and hears its answer. One object per attempt, where a
 * closure per way the call can end cost more than the rest of the attempt.
 */
class Attempt implements StoreRequest<AcquireResult> {
  constructor(
    private readonly session: StoreSession,
    readonly mode: Mode,
    readonly ttl: number,
    readonly fences: number,
    /** `performance.now()` when it was sent. */
    readonly sentAt: number,
    /** Only a refresh of the place in line (not one of the retry policy's attempts). */
    readonly refresh: boolean,
  ) {}

  send(): Promise<AcquireResult> {
    return this.session.sendAttempt(this);
  }

  value(result: AcquireResult): void {
    this.session.attemptAnswered(this, result);
  }

  error(error: LockStoreError): void {
    this.session.attemptFailed(this, error);
  }

  late(result: AcquireResult): void {
    this.session.attemptAnsweredLate(result);
  }

  settled(): void {
    this.session.attemptSettled();
  }
}

/** A grant as the session tells its owner (one per acquisition: a class, see ../gate/GateState.ts). */
class StoreGrant implements Grant {
  constructor(
    readonly fence: number,
    readonly fences: number,
    readonly sentAt: number,
    readonly ttl: number,
    readonly waiting: number | undefined,
    readonly validity: number | undefined,
  ) {}
}
