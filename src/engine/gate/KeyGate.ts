/**
 * The local gate of one key: this process's waiters for the key, in arrival order, and the lock
 * while one of them holds it. Only the first waiter's {@link RemoteSession} talks to the store; the
 * others wait here, costing the store nothing (seed 000's local hot-spot lock).
 *
 * Cohort hand-off: when a holder releases and a local waiter is next in line, the lock passes to
 * it without a store round trip — same store lease (and renewal), next fence — a bounded number of
 * times and for a bounded time after the store granted it (`cohort`). Then, or when nobody here
 * waits, the process gives the store lock up: it releases it first and only then starts the next
 * local waiter's session, at once, with no back-off sleep; a store with a line hands the key to the
 * next process meanwhile, so processes take turns.
 *
 * A gate lives only while its key has a holder, waiters, a hand-off or a release in flight, so
 * memory is bounded by live keys.
 */
import { LockTimeoutError, type LockLostError } from '../../errors.js';
import { HeldLease, type HolderOwner } from '../lease/HeldLease.js';
import type { StoreLease } from '../lease/StoreLease.js';
import { leaseValidity } from '../lease/validity.js';
import type { LockEngine } from '../LockEngine.js';
import { RemoteSession } from './RemoteSession.js';
import type { Waiter } from './Waiter.js';

export class KeyGate implements HolderOwner {
  private readonly waiters = new Set<Waiter>();
  private holder: HeldLease | undefined;
  private storeLease: StoreLease | undefined;
  private session: RemoteSession | undefined;
  private releasing = false;
  /** Local hand-offs made with the current store lease, when the store granted it, and for how long it may be passed on. */
  private passes = 0;
  private grantedAt = 0;
  private turnMs = 0;
  /** Local waiters that were in line behind the first holder at the grant: each gets a pass. */
  private batch = 0;

  constructor(
    readonly engine: LockEngine,
    readonly key: string,
    readonly storeKey: string,
    /** False for a gate of its own (localGate: false): it is in no map. */
    private readonly shared: boolean,
  ) {}

  /** Can waiters be woken by the store? */
  get canWatch(): boolean {
    return this.engine.store.watch !== undefined;
  }

  /** The first waiter in line. */
  head(): Waiter | undefined {
    for (const waiter of this.waiters) return waiter;
    return undefined;
  }

  /** Nothing held, nothing in flight, nobody waiting. */
  get empty(): boolean {
    return !this.busy && this.waiters.size === 0;
  }

  /** Held, passing, being taken or being given back. */
  private get busy(): boolean {
    return this.holder !== undefined || this.storeLease !== undefined || this.session !== undefined || this.releasing;
  }

  enqueue(waiter: Waiter): void {
    this.waiters.add(waiter);
    if (this.waiters.size === 1 && !this.busy) {
      this.startSession();
      return;
    }
    const waitTimeout = waiter.settings.waitTimeout;
    if (waitTimeout === 0) {
      // Someone of this process holds or is taking the key: the one attempt allowed is pointless.
      this.timedOut(waiter);
      return;
    }
    if (waitTimeout !== Infinity) {
      const scheduler = this.engine.timerScheduler;
      waiter.timeout = scheduler.schedule(() => this.timedOut(waiter), waitTimeout);
    }
  }

  /** The waiter's subscriber left. */
  leave(waiter: Waiter): void {
    if (waiter.done) return;
    this.remove(waiter);
    this.afterLeaving();
  }

  /** Fails every first waiter whose wait is over at `now` (the session checks after each refusal). */
  expireHeads(now: number): void {
    let head: Waiter | undefined;
    while ((head = this.head()) !== undefined && head.remaining(now) <= 0) this.fail(head, this.timeoutError(head));
  }

  /** A custom retry policy completed without emitting for the first waiter: it stops waiting. */
  headGivesUp(): void {
    const head = this.head();
    if (head !== undefined) this.fail(head, this.timeoutError(head));
  }

  sessionWon(session: RemoteSession, fence: number, sentAt: number, ttl: number, waiting: number | undefined): void {
    if (this.session !== session) return;
    this.session = undefined;
    const head = this.head();
    const engine = this.engine;
    const storeLease = engine.openStoreLease(this.key, this.storeKey, session.token, ttl, sentAt, head?.settings ?? engine.defaults);
    if (head === undefined) {
      // Nobody wants it any more.
      this.releasing = true;
      void engine.releaseStore(storeLease, undefined).then(() => this.released());
      return;
    }
    // (A lease too short to have any validity, ttl ≤ 2 ms without renewal, is granted and lost at
    // once, as asked for.)
    if (!storeLease.valid(performance.now()) && leaseValidity(storeLease.renewTtl) > 0) {
      // The answer came too late to leave any validity (a slow store and a short TTL): do not
      // hand out a lease that is lost already. Give the key back and try again — unless the wait
      // is over: this path sees no refusal, where waits are otherwise checked.
      this.releasing = true;
      void engine.releaseStore(storeLease, undefined).then(() => this.released());
      this.expireHeads(engine.now());
      return;
    }
    this.storeLease = storeLease;
    this.passes = 0;
    this.grantedAt = performance.now();
    this.turnMs = this.engine.turnMs(waiting);
    storeLease.onLost = (error) => this.lost(storeLease, error);
    this.grant(head, fence);
    this.batch = this.waiters.size;
    storeLease.start();
  }

  sessionFailed(session: RemoteSession, error: unknown): void {
    if (this.session !== session) return;
    this.session = undefined;
    const head = this.head();
    if (head !== undefined) this.fail(head, error, true);
    this.next();
  }

  sessionAbandoned(session: RemoteSession): void {
    if (this.session !== session) return;
    session.abandon();
    this.session = undefined;
    this.next();
  }

  releaseHolder(holder: HeldLease): Promise<boolean> {
    const storeLease = holder.store;
    // A holder that lost its lease no longer blocks the line: give the key back in the background
    // (harmless if it is gone or taken; useful if the store was only slow).
    if (this.holder !== holder) return this.engine.releaseStore(storeLease, holder);
    this.holder = undefined;
    if (this.mayPass(storeLease)) {
      // Handed over in a microtask, not inside this release() call: a chain of local holders whose
      // work ends synchronously must not grow the stack.
      this.passes++;
      this.engine.reportReleased(holder, true, true);
      queueMicrotask(() => this.pass(storeLease, holder.fence + 1));
      return Promise.resolve(true);
    }
    return this.giveBack(storeLease, holder);
  }

  /** May the lock go to the next local waiter without the store? */
  private mayPass(storeLease: StoreLease): boolean {
    const head = this.head();
    if (head === undefined) return false;
    // Everyone who was waiting here at the grant gets the lock once (so a process's waiters need
    // one round of the store's line, not several); beyond that, passes go on for the turn.
    const { maxPasses, maxMs } = this.engine.cohort;
    const elapsed = performance.now() - this.grantedAt;
    if (this.passes >= maxPasses || elapsed >= maxMs) return false;
    if (this.passes >= this.batch && elapsed >= this.turnMs) return false;
    const settings = head.settings;
    const renew = storeLease.renew;
    const sameRenewal = settings.renew === false ? renew === false : renew !== false && renew.interval === settings.renew.interval;
    return settings.ttl === storeLease.renewTtl && sameRenewal && storeLease.valid(performance.now());
  }

  private pass(storeLease: StoreLease, fence: number): void {
    if (this.storeLease !== storeLease) return; // lost meanwhile: the line has moved on
    const head = this.head();
    if (head === undefined || !storeLease.valid(performance.now())) {
      void this.giveBack(storeLease, undefined);
      return;
    }
    this.grant(head, fence);
  }

  /** Releases the store lock, then lets the next local waiter go to the store. */
  private giveBack(storeLease: StoreLease, holder: HeldLease | undefined): Promise<boolean> {
    this.storeLease = undefined;
    storeLease.end();
    this.releasing = true;
    return this.engine.releaseStore(storeLease, holder).then((deleted) => {
      this.released();
      return deleted;
    });
  }

  private released(): void {
    this.releasing = false;
    this.next();
  }

  /** Starts the next waiter's session if the key is free here, or forgets the gate when empty. */
  private next(): void {
    if (this.busy) return;
    if (this.waiters.size > 0) this.startSession();
    else this.dispose();
  }

  private startSession(): void {
    const session = new RemoteSession(this);
    this.session = session;
    session.start(this.waiters.size > 1 || this.engine.recentlyContended());
  }

  private grant(waiter: Waiter, fence: number): void {
    this.remove(waiter);
    const holder = new HeldLease(this, this.storeLease!, fence, performance.now());
    this.holder = holder;
    const engine = this.engine;
    engine.reportAcquired(this.key, holder.token, fence, waiter.startedAt, waiter.attempts);
    waiter.callbacks.granted(holder);
  }

  /** The store lease was lost: its holder is told, and the line moves on without it. */
  private lost(storeLease: StoreLease, error: LockLostError): void {
    const holder = this.holder;
    if (holder === undefined || holder.store !== storeLease) return;
    this.holder = undefined;
    this.storeLease = undefined;
    this.engine.reportLost(holder, error);
    holder.lose(error);
    this.next();
  }

  private timedOut(waiter: Waiter): void {
    if (waiter.done) return;
    this.fail(waiter, this.timeoutError(waiter));
    this.afterLeaving();
  }

  private timeoutError(waiter: Waiter): LockTimeoutError {
    const engine = this.engine;
    const waited = engine.now() - waiter.startedAt;
    engine.reportTimedOut(this.key, waited, waiter.attempts);
    return new LockTimeoutError(this.key, waited, waiter.attempts);
  }

  private fail(waiter: Waiter, error: unknown, storeFailed = false): void {
    this.remove(waiter);
    if (storeFailed) this.engine.reportAcquireFailed(this.key, error, waiter.attempts);
    waiter.callbacks.failed(error);
  }

  private remove(waiter: Waiter): void {
    waiter.done = true;
    this.waiters.delete(waiter);
    waiter.timeout?.unsubscribe();
    waiter.timeout = undefined;
  }

  /** A waiter left: with nobody left in line, the session has nothing to wait for. */
  private afterLeaving(): void {
    if (this.waiters.size > 0) return;
    const session = this.session;
    if (session !== undefined) {
      this.session = undefined;
      session.abandon();
    }
    this.next();
  }

  private dispose(): void {
    if (this.shared && this.empty) this.engine.forgetGate(this);
  }
}
