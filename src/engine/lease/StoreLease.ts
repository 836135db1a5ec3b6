/**
 * The lock as the store holds it for this process: one token, its TTL, its validity on the
 * monotonic clock and its renewal schedule. While it lasts it may serve several local holders in
 * turn (cohort hand-offs, see ../gate/KeyGate.ts); each of them sees it through a
 * {@link HeldLease}. States: `held` → `ended` (given back) or `lost` (expired, taken over, or
 * not renewed before its deadline); `settle` is the one place that leaves `held`.
 *
 * A holder that passed the lock on locally released without asking the store; the store's next
 * answer about this lease (a renewal sent after the pass, or the final release) confirms or denies
 * that its hold was protected to the end, and only then is its `released` event reported.
 */
import { LockLostError, LockStoreError, type LockLostReason } from '../../errors/errors.js';
import { leaseValidity, renewIntervalFor } from '../../options/validity.js';
import type { ExtendOutcome, ReleasedGrant } from '../../store/LockStore.js';
import type { HolderFacts } from '../events/EventReporter.js';
import { AnsweredGrant } from './AnsweredGrant.js';
import type { DueKind, Scheduled, TimerEntry } from './LeaseTimers.js';

/** Counts the fences of a grant that holders were given (a turn's `FenceBlock`). */
export interface FencesGiven {
  readonly issued: number;
}

/** What a store lease needs from the part that keeps leases (../lease/LeaseKeeper.ts). */
export interface StoreLeaseOwner {
  /** Extends one lease now (manual `extend`). */
  extendLease(lease: StoreLease, ttl: number): Promise<ExtendOutcome>;
  schedule(lease: StoreLease, kind: DueKind, dueAt: number, slack?: number): void;
  unschedule(lease: StoreLease): void;
  renewed(lease: StoreLease): void;
  renewFailed(lease: StoreLease, error: LockStoreError): void;
  /** Holders that passed the lock on are now known to have held it to the end (or not). */
  passesSettled(passes: readonly PassedHolder[], outcome: 'passed' | 'gone' | LockStoreError): void;
}

/** A local holder that released by passing the lock on, awaiting the store's confirmation. */
export interface PassedHolder {
  readonly holder: HolderFacts;
  /** `performance.now()` of the pass: only store answers to calls sent after it confirm it. */
  readonly passedAt: number;
}

/** An extend call of a lease, as the lease keeps it until it knows that a later call ran after it. */
interface SentCall {
  readonly sentAt: number;
  /** What the call leaves the lease, counted from its sending. */
  readonly until: number;
  /**
   * A call sent after this moment runs after this one: when its answer was handled (it ran before
   * that); its sending, once it failed (see `StoreLease.ended`); Infinity while it is awaited.
   */
  after: number;
}

/** Told when the store lease is lost (its current local holder loses it). */
export type LostListener = (error: LockLostError) => void;

type State = 'held' | 'ended' | 'lost';

export class StoreLease implements Scheduled {
  timerEntry: TimerEntry | undefined = undefined;
  private state: State = 'held';
  private lostReason: LockLostReason | undefined;
  private given = false;
  /** The last renewal failed (reason for a deadline that passes). */
  private lastRenewError: LockStoreError | undefined;
  /** A renewal was sent and not answered yet. */
  private renewPending = false;
  private currentTtl: number;
  private until: number;
  /**
   * Extend calls sent (renewals and manual ones), oldest first, each with the deadline it leaves
   * counted from its sending: the store may run such a call whether or not its answer ever comes (a
   * lost connection, a stalled link, `commandTimeout`), and the key then ends by its TTL. So the
   * deadline counts on every call that may have run after the one whose answer set it: calls sent
   * after it (a renewal that went out while a longer manual extend was in flight lengthened nothing
   * as the deadline stood, and shortens the one that extend's answer sets), and calls sent before
   * it whose answers had not been handled when it was sent — a Cluster client sends a batched
   * renewal that met a moved slot again only once the batch's answer went through its promise
   * steps, after a lone call redirected with it. See {@link SentCall.after}.
   */
  private sent: SentCall[] | undefined;
  /**
   * When the extend call whose answer set the deadline was sent. Answers can reach this lease out
   * of the order the store ran their calls: replies read together (off one socket, or a stalled
   * link) go through promise chains of different lengths (a renewal's runs through more steps
   * than a manual `extend`'s). An answer to a call sent before this one tells nothing newer.
   */
  private appliedSentAt = Number.NEGATIVE_INFINITY;
  /**
   * When the manual `extend(ttl)` that set `wantedTtl` was sent. Renewals carry `wantedTtl` as it
   * was when they went out, so a renewal sent while a manual extend was in flight asks for the old
   * TTL, and the store may run it last: its answer sets the key's TTL (`currentTtl`), not the one
   * renewals keep — the holder's latest choice stands.
   */
  private wantedSetAt = Number.NEGATIVE_INFINITY;
  /**
   * The last moment this lease recorded (a call's sending, an answer's handling, a pass): each gets
   * a later one than the one before (see {@link StoreLease.moment}), so that no two compare equal.
   */
  private lastMoment = Number.NEGATIVE_INFINITY;
  /** Holders that passed it on and wait for the store's word (kept only while events are observed). */
  private unconfirmed: PassedHolder[] | undefined;
  /**
   * The final release's word (the key was not ours, or the call failed) on the passes an extend
   * call still awaited may yet confirm (see {@link StoreLease.released}).
   */
  private releaseWord: 'gone' | LockStoreError | undefined;
  /** What counts the grant's fences given out (see {@link countsFencesBy}); all of them when unset. */
  private fencesGiven: FencesGiven | undefined;
  /** Who hears about a loss: the gate, which tells the current holder. */
  onLost: LostListener | undefined;

  constructor(
    private readonly owner: StoreLeaseOwner,
    readonly key: string,
    readonly storeKey: string,
    readonly token: string,
    /** The TTL the key has now (a handed-over key's TTL can differ from `wantedTtl`). */
    ttl: number,
    /** `performance.now()` when the call that set that TTL was sent (or a moment known to precede it). */
    readonly acquiredAt: number,
    /** The TTL renewals keep the key at. */
    private wantedTtl: number,
    /** `false` for no renewal, else the explicit interval (or undefined for ttl / 3). */
    readonly renew: false | { readonly interval: number | undefined },
    /**
     * The grant as the store answered it, told to the store at the release (a store that records a
     * grant's fences only then needs it, see `LockStore.release`); `undefined` when not known.
     */
    private readonly grant?: ReleasedGrant,
    /**
     * The validity the store measured for the grant (`Acquired.validity`), when it did: the
     * deadline is the earlier of it and the engine's own margin, both counted from `acquiredAt`.
     */
    storeValidity?: number,
  ) {
    this.currentTtl = ttl;
    this.until = acquiredAt + (storeValidity === undefined ? leaseValidity(ttl) : Math.min(leaseValidity(ttl), storeValidity));
  }

  get ttl(): number {
    return this.currentTtl;
  }

  /**
   * From now on `given` counts the grant's fences that holders were given (the turn's fence
   * block): the release tells the store only those, so a store that records a grant's fences at
   * its release records fewer, or none once its clock has passed them (see `LockStore.release`).
   */
  countsFencesBy(given: FencesGiven): void {
    this.fencesGiven = given;
  }

  /** The grant as the release tells it to the store: the fences given out so far, not all reserved. */
  get releasedGrant(): ReleasedGrant | undefined {
    const grant = this.grant;
    const given = this.fencesGiven;
    if (grant === undefined || given === undefined || given.issued >= grant.fences || given.issued < 1) return grant;
    return new AnsweredGrant(grant.fence, given.issued, grant.answeredAt);
  }

  get validUntil(): number {
    return this.until;
  }

  get isHeld(): boolean {
    return this.state === 'held';
  }

  /**
   * Lost to its deadline (`'expired'` or `'store-unreachable'`): as far as this process knows, the
   * key may still be ours in the store, left to lapse (lock-delay keeps such keys, see LeaseKeeper).
   */
  get lapsed(): boolean {
    return this.lostReason === 'expired' || this.lostReason === 'store-unreachable';
  }

  /** The TTL the next renewal asks for. */
  get renewTtl(): number {
    return this.wantedTtl;
  }

  /** Held, and its validity has not passed at `now`. */
  valid(now: number): boolean {
    return this.state === 'held' && now < this.until;
  }

  /**
   * Starts the clock: the first renewal (at once when the key's TTL is not the wanted one and
   * nothing else would renew it), or the deadline. Loses the lease if already invalid.
   */
  start(now = performance.now()): void {
    if (this.currentTtl !== this.wantedTtl && this.renew === false) {
      // A handed-over key's TTL is not ours, and nothing would renew it: extend it once, now.
      if (this.checkValid(now)) this.owner.schedule(this, 'renew', now);
      return;
    }
    // A handed-over key's shorter TTL is renewed on its own schedule (a third of it): work that
    // is done before then never pays for the extension.
    this.scheduleNext(now);
  }

  /** A local holder passed the lock on: its release waits for the store's next word. */
  passed(holder: HolderFacts, track: boolean): void {
    if (track) (this.unconfirmed ??= []).push({ holder, passedAt: this.moment(performance.now()) });
  }

  /** The lease is being (or was) given back to the store. */
  get givenBack(): boolean {
    return this.given;
  }

  /** Stops renewal for good (the lease is being given back). */
  end(): void {
    this.given = true;
    if (this.state !== 'held') return;
    this.state = 'ended';
    this.owner.unschedule(this);
  }

  /**
   * The final release was answered (`true`: it was still ours) or failed: settles the passes —
   * except, when it says the key was not ours (or failed), those made before an extend call whose
   * answer is still awaited: the store ran that call before the release (it runs one connection's
   * calls in order) and its answer, read with the release's but handled after it (a renewal's
   * answer goes through more promise steps), may confirm them (see {@link StoreLease.lateAnswer}).
   */
  released(answer: boolean | LockStoreError): void {
    if (answer === true) {
      this.settlePasses('passed', Infinity);
      return;
    }
    const word = answer === false ? 'gone' : answer;
    const awaited = this.lastAwaited();
    if (awaited === undefined) {
      this.settlePasses(word, Infinity);
      return;
    }
    this.settlePassesAfter(word, awaited);
    this.releaseWord = word;
  }

  /**
   * An extend call sent at `sentAt` ended (`outcome`; undefined: failed) after the lease was given
   * back or lost. An `extended` answer still confirms the passes made before its sending (the key
   * was ours after them), whether the release's answer came before it or not; once no call is
   * awaited, passes the release's word waits on take it.
   */
  private lateAnswer(outcome: ExtendOutcome | undefined, sentAt: number): void {
    this.ended(sentAt, sentAt);
    if (outcome === 'extended') this.settlePasses('passed', sentAt);
    const word = this.releaseWord;
    if (word === undefined || this.lastAwaited() !== undefined) return;
    this.releaseWord = undefined;
    this.settlePasses(word, Infinity);
  }

  /** When the last extend call whose answer is still awaited was sent, if one is. */
  private lastAwaited(): number | undefined {
    const calls = this.sent;
    if (calls === undefined) return undefined;
    let last: number | undefined;
    for (const call of calls) if (call.after === Infinity) last = call.sentAt;
    return last;
  }

  /** Manual extension: `true` when extended, `false` when no longer held (then lost, if found gone or taken). */
  async extend(ttl: number): Promise<boolean> {
    if (!this.checkValid(performance.now())) return false;
    const sentAt = this.moment(performance.now());
    if (this.sending(sentAt, ttl)) {
      // The deadline came sooner: watch it (a renewal due after it would come too late anyway).
      const entry = this.timerEntry;
      if (entry === undefined || entry.dueAt > this.until) this.owner.schedule(this, 'deadline', this.until);
    }
    let outcome: ExtendOutcome;
    try {
      outcome = await this.owner.extendLease(this, ttl);
    } catch (error) {
      if (this.state === 'held') this.ended(sentAt, sentAt);
      else this.lateAnswer(undefined, sentAt);
      throw error;
    }
    return this.extended(outcome, sentAt, ttl, true);
  }

  /** The answer to an extend call sent at `sentAt` with `ttl`: a renewal, or a manual one (`manual`). */
  extended(outcome: ExtendOutcome, sentAt: number, ttl: number, manual = false): boolean {
    if (this.state !== 'held') return (this.lateAnswer(outcome, sentAt), false);
    const now = performance.now();
    if (!this.checkValid(now)) return false;
    if (outcome === 'gone') return (this.lose('expired'), false);
    if (outcome === 'taken') return (this.lose('taken-over'), false);
    const call = this.ended(sentAt, this.moment(now));
    // The holder's latest extend(ttl) sets what renewals keep, in whatever order answers come
    // (two sent in the same instant are answered in the order they were sent: the later one wins).
    if (manual && sentAt >= this.wantedSetAt) {
      this.wantedSetAt = sentAt;
      this.wantedTtl = ttl;
    }
    // The store ran this call before the one whose answer set the deadline: that one's TTL stands
    // (and a renewal sent since is still pending).
    if (sentAt < this.appliedSentAt) return true;
    // The last call run sets the TTL: this one, unless a call that may have run after it leaves less.
    this.appliedSentAt = sentAt;
    this.renewPending = false;
    this.currentTtl = ttl;
    this.until = this.settleCalls(call, sentAt, sentAt + leaseValidity(ttl));
    this.lastRenewError = undefined;
    this.settlePasses('passed', sentAt);
    this.scheduleNext(now, sentAt);
    this.owner.renewed(this);
    return true;
  }

  /**
   * A renewal call sent at `sentAt` failed: retry while there is time, else wait for the deadline.
   * A failure of a call sent before the one whose answer set the deadline tells nothing newer: the
   * renewal scheduled by that answer stands, and no `renew-failed` is reported.
   */
  renewFailed(error: LockStoreError, sentAt: number): void {
    if (this.state !== 'held') {
      this.lateAnswer(undefined, sentAt);
      return;
    }
    this.ended(sentAt, sentAt);
    if (sentAt < this.appliedSentAt) return;
    const now = performance.now();
    if (!this.checkValid(now)) return;
    this.renewPending = false;
    this.lastRenewError = error;
    this.owner.renewFailed(this, error);
    // Spaced by the validity the deadline leaves from the call that set it: a shorter call that
    // may have run after it (this renewal, to a TTL below a manual extend's) holds the deadline
    // well below the one the TTL's interval is made for.
    const span = this.until - Math.max(this.appliedSentAt, this.acquiredAt);
    const retryAt = now + Math.max(1, Math.floor(Math.min(this.interval, span / 3) / 3));
    if (retryAt < this.until) this.owner.schedule(this, 'renew', retryAt);
    else this.owner.schedule(this, 'deadline', this.until);
  }

  /**
   * A renewal is sent at `now`: until it is answered, only the deadline is watched. Returns the
   * moment it is recorded at, which its answer or failure must name.
   */
  renewing(now: number): number {
    const sentAt = this.moment(now);
    this.renewPending = true;
    this.sending(sentAt, this.wantedTtl);
    this.owner.schedule(this, 'deadline', this.until);
    return sentAt;
  }

  /**
   * `now` as this lease records it: later than every moment recorded before, by a nanosecond when
   * the clock reads the same (two calls sent in one instant, an answer handled in the instant a
   * call goes out). Comparisons of sendings, answers and passes then never meet a tie whose order
   * they cannot tell: with equal sending times, an answer handled out of order could be booked
   * against the other call, and a longer extend could set the deadline past a shorter one that
   * ran after it. (The nanosecond is far inside the deadline's margin.)
   */
  private moment(now: number): number {
    const at = now > this.lastMoment ? now : this.lastMoment + 1e-6;
    this.lastMoment = at;
    return at;
  }

  /**
   * An extend call with `ttl` goes out at `sentAt`: it is kept (see {@link StoreLease.sent}) until
   * a call known to have run after it sets the deadline. When it would end the key before the
   * current deadline (a shorter TTL: a manual `extend(ttl)`, or the renewal of a key granted with a
   * longer TTL than its holder asked for), the deadline moves to what it leaves at once: the store
   * may run it even if no answer comes. Says whether the deadline moved.
   */
  private sending(sentAt: number, ttl: number): boolean {
    const until = sentAt + leaseValidity(ttl);
    (this.sent ??= []).push({ sentAt, until, after: Infinity });
    if (until >= this.until) return false;
    this.until = until;
    return true;
  }

  /**
   * The call sent at `sentAt` ended: a call sent after `after` runs after it. Answered: `after` is
   * now (its answer is being handled, so it ran). Failed (no answer, or none in time): `after` is
   * its sending — the store ran it before the calls sent after it, or never will (it runs one
   * client's calls in the order they reach it, and a client sends its unanswered calls again in
   * order). Returns that call.
   */
  private ended(sentAt: number, after: number): SentCall | undefined {
    const call = this.sent?.find((c) => c.sentAt === sentAt && c.after === Infinity);
    if (call !== undefined) call.after = after;
    return call;
  }

  /**
   * The deadline `call`, sent at `sentAt` and answered `extended`, gives (`until`), capped by the
   * calls that may have run after it; the calls known to have run before it are forgotten.
   */
  private settleCalls(call: SentCall | undefined, sentAt: number, until: number): number {
    const calls = this.sent;
    if (calls === undefined) return until;
    // (usually only the answered call was out: nothing is left, and no array is made)
    let left: SentCall[] | undefined;
    for (const other of calls) {
      if (other === call || other.after <= sentAt) continue;
      (left ??= []).push(other);
      until = Math.min(until, other.until);
    }
    this.sent = left;
    return until;
  }

  due(kind: DueKind, now: number, renewals: Scheduled[]): void {
    if (this.state !== 'held' || !this.checkValid(now)) return;
    if (kind === 'renew') renewals.push(this);
    else this.owner.schedule(this, 'deadline', this.until);
  }

  /** Loses the lease if its validity has passed at `now`; says whether it is still held. */
  checkValid(now: number): boolean {
    if (this.state !== 'held') return false;
    if (now < this.until) return true;
    // Unanswered or failed renewals mean the store could not be reached in time; otherwise
    // nothing renewed the lease (renew: false, or this process stalled past the validity).
    const unreachable = this.renewPending || this.lastRenewError !== undefined;
    this.lose(unreachable ? 'store-unreachable' : 'expired', this.lastRenewError);
    return false;
  }

  /** Loses the lease now for a reason of the engine's own (the locker is closing). */
  abandon(reason: LockLostReason): void {
    if (this.state === 'held') this.lose(reason);
  }

  private get interval(): number {
    return this.renew === false ? Infinity : renewIntervalFor(Math.min(this.currentTtl, this.wantedTtl), this.renew.interval);
  }

  /** The next renewal (counted from `from`, when the validity started), or the deadline. */
  private scheduleNext(now: number, from = this.acquiredAt): void {
    if (!this.checkValid(now)) return;
    if (this.renew === false) {
      this.owner.schedule(this, 'deadline', this.until);
      return;
    }
    const interval = this.interval;
    const at = from + interval;
    if (at < this.until) {
      this.owner.schedule(this, 'renew', at, interval / 4);
      return;
    }
    // A validity shorter than the interval (a quorum store's measure of a slow round, or of a key
    // kept lockDelay longer): a renewal due at the deadline would come too late to be sent, so it
    // goes out halfway there, leaving the other half for its answer.
    const halfway = (this.until - now) / 2;
    this.owner.schedule(this, 'renew', now + halfway, halfway / 4);
  }

  private lose(reason: LockLostReason, cause?: unknown): void {
    this.state = 'lost';
    this.lostReason = reason;
    this.owner.unschedule(this);
    const error = new LockLostError(this.key, this.token, reason, cause);
    // Passes made before the loss were not confirmed: the key was gone or taken, or nobody knows.
    // (A lease lost to the locker closing is released next: that answer settles them.)
    if (reason === 'store-unreachable')
      this.settlePasses(this.lastRenewError ?? new LockStoreError(this.key, 'extend', 'no answer before the lease deadline'), Infinity);
    else if (reason !== 'locker-closed') this.settlePasses('gone', Infinity);
    this.onLost?.(error);
  }

  /** Reports the passes made after `sentAt` as settled with `outcome`. */
  private settlePassesAfter(outcome: 'gone' | LockStoreError, sentAt: number): void {
    const waiting = this.unconfirmed;
    if (waiting === undefined) return;
    const n = waiting.findIndex((pass) => pass.passedAt > sentAt);
    if (n < 0) return;
    this.owner.passesSettled(waiting.splice(n), outcome);
  }

  /** Reports the passes made before `sentAt` as settled with `outcome`. */
  private settlePasses(outcome: 'passed' | 'gone' | LockStoreError, sentAt: number): void {
    const waiting = this.unconfirmed;
    if (waiting === undefined || waiting.length === 0) return;
    let n = 0;
    while (n < waiting.length && waiting[n]!.passedAt <= sentAt) n++;
    if (n === 0) return;
    const settled = n === waiting.length ? waiting : waiting.slice(0, n);
    this.unconfirmed = n === waiting.length ? undefined : waiting.slice(n);
    this.owner.passesSettled(settled, outcome);
  }
}
