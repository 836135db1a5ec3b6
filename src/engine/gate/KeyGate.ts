/**
 * The local gate of one key: this process's waiters for the key, in arrival order, and the lock
 * while one of them holds it. Only the first waiter's {@link StoreSession} talks to the store; the
 * others wait here, costing the store nothing (seed 000's local hot-spot lock).
 *
 * An explicit state machine (./GateState.ts): `idle`, `acquiring`, `held`, `passing`, `releasing`,
 * `closed`; {@link KeyGate.moveTo} is the one place that changes state.
 *
 * Cohort hand-off: when a holder releases and a local waiter is next, the lock may pass to it
 * without a store round trip (same store lease and renewal, the next fence of the grant's block),
 * as the hand-off policy allows and provided the lease is still valid and the waiter asked for the
 * same lease. Otherwise the process gives the store lock up: it releases it first and only then
 * starts the next local waiter's session; a store with a line hands the key to the next process
 * meanwhile, so processes take turns. A store without one (a quorum store) does not: when its
 * grant said other tokens were refused the key lately, the next session of this locker for the key
 * (with a waiter of this gate, or of a new gate soon after) sleeps one back-off step before its
 * first attempt, as the other processes' waiters do between theirs, so that one of them can take
 * the key.
 *
 * Waiters behind a local holder keep their own wait limit (watched by one timer for the gate, see
 * ./LocalDeadlines.ts) and, with a retry function, their own retry clock: every time it fires
 * counts as an attempt that found the lock held, and when it stops the waiter gives up, as it
 * would polling the store.
 *
 * A gate lives only while its key has a holder, waiters, a hand-off or a release in flight, so
 * memory is bounded by live keys.
 */
import { Subscription } from 'rxjs';
import { LockerClosedError, LockLostError, LockTimeoutError, type LockStoreError } from '../../errors/errors.js';
import type { AcquireSettings } from '../../options/validate.js';
import { leaseValidity } from '../../options/validity.js';
import { FenceBlock } from '../fencing/FenceBlock.js';
import type { Turn } from '../handoff/HandoffPolicy.js';
import { HeldLease, type HolderOwner } from '../lease/HeldLease.js';
import type { StoreLease } from '../lease/StoreLease.js';
import { AnsweredGrant } from '../lease/AnsweredGrant.js';
import { backoff } from '../session/backoff.js';
import type { Grant, SessionOwner } from '../session/SessionOwner.js';
import { StoreSession } from '../session/StoreSession.js';
import type { GateContext, GateDirectory } from './GateContext.js';
import { AcquiringState, canMove, CLOSED, HeldState, IDLE, PassingState, RELEASING, type GateState } from './GateState.js';
import { LocalDeadlines } from './LocalDeadlines.js';
import type { Waiter } from './Waiter.js';
import { WaiterLine } from './WaiterLine.js';

/** Illegal state moves throw under RXJS_LOCK_STRICT=1 (the tests); otherwise they are refused. */
const STRICT = typeof process !== 'undefined' && process.env?.RXJS_LOCK_STRICT === '1';

export class KeyGate implements SessionOwner, HolderOwner {
  private readonly waiters = new WaiterLine<Waiter>();
  private state: GateState = IDLE;
  /** Set by close(): a release that ends moves to `closed` instead of `idle`. */
  private closing = false;
  /** The release in flight, for close() to wait on. */
  private releasing: Promise<unknown> | undefined;
  /** The wait limits of the waiters behind someone of this locker (made for the first one: most gates never have one). */
  private deadlines: LocalDeadlines | undefined;

  constructor(
    private readonly ctx: GateContext,
    private readonly directory: GateDirectory,
    readonly key: string,
    readonly storeKey: string,
  ) {}

  /** The one place that changes the gate's state. */
  private moveTo(next: GateState): boolean {
    if (!canMove(this.state.name, next.name)) {
      if (STRICT) throw new Error(`rxjs-lock: illegal gate move ${this.state.name} → ${next.name} for ${this.key}`);
      return false;
    }
    this.state = next;
    return true;
  }

  /** The state's name (for tests and inspection). */
  get stateName(): GateState['name'] {
    return this.state.name;
  }

  /** Acquisitions waiting in this gate (for inspection). */
  get waiting(): number {
    return this.waiters.size;
  }

  // ─── what the session sees (SessionOwner) ────────────────────────────────────────────────────

  head(): Waiter | undefined {
    return this.waiters.head;
  }

  get behind(): number {
    return this.waiters.size > 0 ? this.waiters.size - 1 : 0;
  }

  /** Fences for a grant: room for a pass to each waiter behind the head that asked for the same lease. */
  fencesWanted(): number {
    let compatible = 0;
    const head = this.waiters.head;
    for (let waiter = head?.behind; waiter !== undefined; waiter = waiter.behind) {
      if (sameLease(waiter.settings, head!.settings)) compatible++;
    }
    return this.ctx.policy.fencesFor(compatible);
  }

  expireHeads(now: number): void {
    let head: Waiter | undefined;
    while ((head = this.head()) !== undefined && head.remaining(now) <= 0) this.fail(head, this.timeoutError(head));
  }

  headGivesUp(): void {
    const head = this.head();
    if (head !== undefined) this.fail(head, this.timeoutError(head));
  }

  won(session: object, grant: Grant): void {
    const state = this.state;
    if (state.name !== 'acquiring' || state.session !== session) return;
    const ctx = this.ctx;
    const head = this.head();
    const settings = head?.settings ?? ctx.defaults;
    // (now: after the store's answer reached us, as the release must be told)
    const now = performance.now();
    const answered = new AnsweredGrant(grant.fence, grant.fences, now);
    const storeLease = ctx.leases.open(
      this.key,
      this.storeKey,
      state.session.token,
      grant.ttl,
      grant.sentAt,
      settings.ttl,
      settings.renew,
      answered,
      grant.validity,
    );
    if (head === undefined) {
      // Nobody wants it any more.
      this.giveBack(storeLease, undefined);
      return;
    }
    // (A lease too short to have any validity, ttl ≤ 2 ms without renewal, is granted and lost at
    // once, as asked for.)
    if (!storeLease.valid(now) && leaseValidity(storeLease.renewTtl) > 0) {
      // The answer came too late to leave any validity (a slow store and a short TTL): do not
      // hand out a lease that is lost already. Give the key back and try again — unless the wait
      // is over: this path sees no refusal, where waits are otherwise checked.
      this.giveBack(storeLease, undefined);
      this.expireHeads(ctx.clock.now());
      return;
    }
    const fences = new FenceBlock(grant.fence, grant.fences);
    storeLease.countsFencesBy(fences);
    const turn = ctx.policy.startTurn(fences, grant.waiting, this.behind, now);
    storeLease.onLost = (error) => this.lost(storeLease, error);
    this.grantTo(head, storeLease, turn, fences.first, false, now);
    storeLease.start(now);
  }

  failed(session: object, error: unknown): void {
    const state = this.state;
    if (state.name !== 'acquiring' || state.session !== session) return;
    const head = this.head();
    this.moveTo(IDLE);
    if (head !== undefined) this.fail(head, error, true);
    this.next();
  }

  emptied(session: object): void {
    const state = this.state;
    if (state.name !== 'acquiring' || state.session !== session) return;
    this.moveTo(IDLE);
    this.next();
  }

  // ─── acquisitions ────────────────────────────────────────────────────────────────────────────

  /** A new acquisition joins the line. */
  enqueue(waiter: Waiter): void {
    if (this.state.name === 'closed') {
      waiter.done = true;
      waiter.callbacks.failed(new LockerClosedError(this.key));
      return;
    }
    this.waiters.add(waiter);
    this.ctx.longWaits.watch(this, waiter);
    if (this.state.name === 'idle' && this.head() === waiter) {
      this.startSession();
      return;
    }
    // Someone of this locker holds or is taking the key: that is this waiter's first look.
    waiter.attempts = 1;
    if (waiter.settings.waitTimeout === 0) {
      // The one attempt allowed found the key busy.
      this.timedOut(waiter);
      return;
    }
    this.waitLocally(waiter);
    if (this.state.name === 'idle') this.next(); // re-entrant: a callback emptied the gate meanwhile
  }

  /** The waiter's subscriber left. */
  leave(waiter: Waiter): void {
    if (waiter.done) return;
    const wasHead = this.head() === waiter;
    this.remove(waiter);
    this.afterLeaving(wasHead);
  }

  // ─── holders (HolderOwner) ───────────────────────────────────────────────────────────────────

  releaseHolder(holder: HeldLease): Promise<boolean> {
    const state = this.state;
    if (state.name !== 'held' || state.holder !== holder) return this.releaseFormer(holder);
    const now = performance.now();
    const { storeLease, turn } = state;
    const head = this.head();
    const policy = this.ctx.policy;
    if (head !== undefined && this.mayServe(head.settings, storeLease, now) && policy.mayPass(turn, now)) {
      const fence = policy.pass(turn);
      if (fence !== undefined) {
        storeLease.passed(holder, this.ctx.events.observed);
        this.moveTo(new PassingState(storeLease, turn));
        // Handed over in a microtask, not inside this release() call: a chain of local holders
        // whose work ends synchronously must not grow the stack.
        queueMicrotask(() => this.pass(storeLease, turn, fence));
        return Promise.resolve(true);
      }
    }
    return this.giveBack(storeLease, holder, now, othersAfter(turn));
  }

  // ─── the locker ──────────────────────────────────────────────────────────────────────────────

  /**
   * The locker is closing: waiters fail with `LockerClosedError`, a session is abandoned, a holder
   * loses its lease (`'locker-closed'`) and the store lock is given back. Resolves once the gate's
   * own release (if any) was answered.
   */
  close(): Promise<unknown> {
    this.closing = true;
    this.deadlines?.stop();
    for (const waiter of this.waiters.toArray()) {
      const error = new LockerClosedError(this.key);
      this.ctx.events.closed(this.key, error);
      this.remove(waiter);
      waiter.callbacks.failed(error);
    }
    const state = this.state;
    switch (state.name) {
      case 'idle':
        this.moveTo(CLOSED);
        break;
      case 'acquiring':
        this.moveTo(CLOSED);
        state.session.abandon();
        break;
      case 'held': {
        const { storeLease, holder } = state;
        storeLease.onLost = undefined;
        storeLease.abandon('locker-closed');
        // Given back first: the holder's own release (run by whoever hears of the loss, at once)
        // then finds the lease no longer the gate's and gives nothing back a second time.
        this.giveBack(storeLease, undefined);
        const error = new LockLostError(this.key, storeLease.token, 'locker-closed');
        holder.lose(error, () => this.ctx.events.lost(holder, error));
        break;
      }
      case 'passing':
        this.giveBack(state.storeLease, undefined);
        break;
      case 'releasing':
      case 'closed':
        break;
    }
    return this.releasing ?? Promise.resolve();
  }

  // ─── moves ───────────────────────────────────────────────────────────────────────────────────

  private startSession(): void {
    const head = this.head()!;
    this.stopLocal(head);
    const sessions = this.ctx.sessions;
    const session = new StoreSession(this, sessions);
    this.moveTo(new AcquiringState(session));
    // (a store without a line: when this locker gave the key back to it lately, see StoreSession.start)
    const gaveBackAt = sessions.access.queue === undefined ? this.directory.lastGiveBack(this.storeKey) : undefined;
    session.start(this.waiters.size > 1 || sessions.contention.recent, gaveBackAt);
  }

  /** Gives `waiter` the lock with `fence`; `passed` when it came from a local holder. */
  private grantTo(waiter: Waiter, storeLease: StoreLease, turn: Turn, fence: number, passed: boolean, now = performance.now()): void {
    this.remove(waiter);
    const holder = new HeldLease(this, storeLease, fence, now);
    this.moveTo(new HeldState(storeLease, turn, holder));
    const events = this.ctx.events;
    if (events.observed) events.acquired(holder, this.ctx.clock.now() - waiter.startedAt, waiter.attempts, passed);
    waiter.callbacks.granted(holder);
  }

  /** The microtask of a local hand-off. */
  private pass(storeLease: StoreLease, turn: Turn, fence: number): void {
    const state = this.state;
    if (state.name !== 'passing' || state.storeLease !== storeLease) return; // lost or closed meanwhile
    const head = this.head();
    if (head === undefined || !this.mayServe(head.settings, storeLease, performance.now())) {
      this.giveBack(storeLease, undefined, performance.now(), othersAfter(turn));
      return;
    }
    this.grantTo(head, storeLease, turn, fence, true);
  }

  /**
   * May `storeLease` serve a waiter that asked for `settings`? Only while it is valid, and only
   * when the waiter asked for the same lease: the same TTL and renewal.
   */
  private mayServe(settings: AcquireSettings, storeLease: StoreLease, now: number): boolean {
    return storeLease.valid(now) && settings.ttl === storeLease.renewTtl && sameRenewal(settings.renew, storeLease.renew);
  }

  /**
   * Releases the store lock, then lets the next local waiter go to the store. `othersAfter`: the
   * store said at the grant that other processes were after the key.
   */
  private giveBack(storeLease: StoreLease, holder: HeldLease | undefined, now = performance.now(), othersAfter = false): Promise<boolean> {
    this.moveTo(RELEASING);
    const ctx = this.ctx;
    const releasing = new Promise<boolean>((resolve) => {
      ctx.leases.release(
        storeLease,
        (answer) => {
          if (holder !== undefined && typeof answer === 'boolean') ctx.events.released(holder, now, answer ? 'released' : 'gone');
          this.releasing = undefined;
          if (this.closing) this.moveTo(CLOSED);
          else {
            this.moveTo(IDLE);
            // A store without a line that said others were after this key: this locker's next
            // session for it lets their polls come first (see StoreSession.start). Only on the
            // store's word for this key: the locker's own memory of refusals is locker-wide (any
            // key, 2 s), and would make it yield keys nobody else wants. A store with a line hands
            // the key to the next process in it anyway.
            if (othersAfter && ctx.sessions.access.queue === undefined) this.directory.noteGiveBack(this.storeKey, ctx.clock.now());
            this.next();
          }
          resolve(answer === true);
        },
        now,
      );
    });
    // (answered synchronously only by a broken store; then the release is over already)
    if (this.state.name === 'releasing') this.releasing = releasing;
    return releasing;
  }

  /**
   * A holder that is no longer the gate's (its lease was lost) gives its key back in the
   * background: harmless if the key is gone or taken, useful if the store was only slow. Not when
   * the gate gave that lease back already (the locker closed). It resolves `false` whatever the
   * store says, and no `released` event follows: the holder's `lost` event told how its hold ended.
   */
  private releaseFormer(holder: HeldLease): Promise<boolean> {
    const storeLease = holder.store;
    if (storeLease.givenBack) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => this.ctx.leases.release(storeLease, () => resolve(false), undefined, true));
  }

  /** The store lease was lost: its holder is told, and the line moves on without it. */
  private lost(storeLease: StoreLease, error: LockLostError): void {
    const state = this.state;
    if ((state.name !== 'held' && state.name !== 'passing') || state.storeLease !== storeLease) return;
    this.moveTo(IDLE);
    if (state.name === 'held') {
      const holder = state.holder;
      holder.lose(error, () => this.ctx.events.lost(holder, error));
    } else {
      // Lost between two local holders: nobody will release it, so do it here (in the background).
      this.ctx.leases.release(storeLease, () => undefined, undefined, true);
    }
    this.next();
  }

  /** Starts the next waiter's session if the key is free here, or forgets the gate when empty. */
  private next(): void {
    if (this.state.name !== 'idle') return;
    if (this.waiters.size > 0) this.startSession();
    else {
      this.deadlines?.stop();
      this.directory.forget(this);
    }
  }

  // ─── waiters ─────────────────────────────────────────────────────────────────────────────────

  /** Watches the wait limit and, with a retry function, runs the retry clock of a waiter behind someone. */
  private waitLocally(waiter: Waiter): void {
    waiter.waitsLocally = true;
    if (waiter.settings.waitTimeout !== Infinity) {
      this.deadlines ??= new LocalDeadlines(this.ctx.clock, (now) => this.localLimitsDue(now));
      this.deadlines.watch(waiter.deadline);
    }
    if (typeof waiter.settings.retry === 'function') {
      const local = new Subscription();
      waiter.local = local;
      this.tick(waiter, local);
    }
  }

  /** `waiter` no longer waits locally (it left, or its wait is now the store session's to watch). */
  private stopLocal(waiter: Waiter): void {
    if (waiter.waitsLocally && waiter.settings.waitTimeout !== Infinity) this.deadlines?.forget();
    waiter.stopLocal();
  }

  /** The earliest local wait limit came: who waits locally and is due times out; the timer is armed for the next limit. */
  private localLimitsDue(now: number): void {
    // (timedOut does nothing to a waiter that left meanwhile: a callback may have made one leave)
    for (const waiter of this.waiters.toArray()) {
      if (waiter.waitsLocally && waiter.remaining(now) <= 0) this.timedOut(waiter);
    }
    let earliest = Infinity;
    for (let waiter = this.waiters.head; waiter !== undefined; waiter = waiter.behind) {
      if (waiter.waitsLocally && waiter.deadline < earliest) earliest = waiter.deadline;
    }
    this.deadlines?.arm(earliest); // (Infinity: nothing to arm)
  }

  /**
   * The retry function's clock for a waiter behind someone: each emission is one more look that
   * found the lock held; completing without one gives up; an error fails the waiter.
   */
  private tick(waiter: Waiter, local: Subscription): void {
    const clock = this.ctx.clock;
    let fired = false;
    let synchronous = true;
    const step = new Subscription();
    local.add(step);
    try {
      step.add(
        backoff(waiter.settings.retry, waiter.attempts, Infinity, clock.random, clock.scheduler).subscribe({
          next: () => {
            if (fired || waiter.done || waiter.local !== local) return;
            fired = true;
            waiter.attempts++;
            local.remove(step);
            step.unsubscribe();
            // A notifier that fires at once must not loop synchronously.
            if (synchronous) local.add(clock.timers.schedule(() => this.tick(waiter, local)));
            else this.tick(waiter, local);
          },
          error: (error: unknown) => {
            if (!waiter.done && waiter.local === local) this.failLocal(waiter, error);
          },
          complete: () => {
            if (!fired && !waiter.done && waiter.local === local) this.timedOut(waiter);
          },
        }),
      );
    } catch (error) {
      this.failLocal(waiter, error);
    }
    synchronous = false;
  }

  private timedOut(waiter: Waiter): void {
    if (waiter.done) return;
    const wasHead = this.head() === waiter;
    this.fail(waiter, this.timeoutError(waiter));
    this.afterLeaving(wasHead);
  }

  private failLocal(waiter: Waiter, error: unknown): void {
    if (waiter.done) return;
    const wasHead = this.head() === waiter;
    this.fail(waiter, error);
    this.afterLeaving(wasHead);
  }

  private timeoutError(waiter: Waiter): LockTimeoutError {
    const waited = this.ctx.clock.now() - waiter.startedAt;
    const attempts = Math.max(1, waiter.attempts);
    this.ctx.events.timedOut(this.key, waited, attempts, waiter.settings.skip === true);
    return new LockTimeoutError(this.key, waited, attempts);
  }

  private fail(waiter: Waiter, error: unknown, storeFailed = false): void {
    this.remove(waiter);
    if (storeFailed) this.ctx.events.acquireFailed(this.key, error as LockStoreError, waiter.attempts);
    waiter.callbacks.failed(error);
  }

  private remove(waiter: Waiter): void {
    waiter.done = true;
    this.waiters.delete(waiter);
    this.ctx.longWaits.forget(waiter);
    this.stopLocal(waiter);
  }

  /**
   * A waiter left. With nobody left in line, the session has nothing to wait for; when the first
   * waiter left, the session now works for the next one, whose wait it watches from here on.
   */
  private afterLeaving(wasHead: boolean): void {
    const state = this.state;
    if (state.name !== 'acquiring') return;
    if (this.waiters.size === 0) {
      this.moveTo(IDLE);
      state.session.abandon();
      this.next();
    } else if (wasHead) {
      this.stopLocal(this.head()!);
      state.session.replan();
    }
  }
}

/** Do two acquisitions ask for the same lease (TTL and renewal)? Only then can one pass to the other. */
function sameLease(a: AcquireSettings, b: AcquireSettings): boolean {
  return a.ttl === b.ttl && sameRenewal(a.renew, b.renew);
}

function sameRenewal(a: AcquireSettings['renew'], b: AcquireSettings['renew']): boolean {
  return a === false ? b === false : b !== false && a.interval === b.interval;
}

/** Did the store say at the turn's grant that other processes were after the key? */
function othersAfter(turn: Turn): boolean {
  const waiting = turn.storeWaiting;
  return waiting !== undefined && waiting > 0;
}
