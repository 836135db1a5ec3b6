/**
 * How a mutex waiter's session (src/engine/session/StoreSession.ts) ends its wait at the store, on
 * a real Redis: when its retry function stops while it holds a place in the store's line (the
 * leave that may find the key handed to it, that fails, that answers late, that comes after the
 * waiter was abandoned), when a direct attempt fails or times out but the store ran it anyway (the
 * key given back by token, once), and the leave sent when a waiter is abandoned with an attempt in
 * flight (after that attempt, and not at all when its late grant was given back already).
 * Mutation testing (npm run mutation:session) found these guards unprotected.
 *
 * The waiters' stores here have no wake-up channel (`wakeUp: false`): no grant signal races the
 * calls the tests hold back, so each path is taken on purpose. A key or a place left to a dead
 * token lasts {@link TTL}; "promptly" is well under it.
 */
import { EMPTY, firstValueFrom, timer, type Observable, type Subscription } from 'rxjs';
import { expect, it } from 'vitest';
import { isLockStoreError, isLockTimeoutError, type Lease, type LockerOptions } from '../../src/index.js';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/redis.js';
import type { AcquireResult, LockStore } from '../../src/store/LockStore.js';
import { InterceptStore, lineOf, recordedLocker } from '../support/handoffHarness.js';
import { suiteStore } from '../support/suiteLocker.js';
import { redisSuite } from '../support/redisSuite.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

/** The TTL of every key and place here: what a key or place left to a dead token costs. */
const TTL = 10_000;
/** "Promptly": well under {@link TTL}, with room for a slow machine. */
const PROMPT = 3_000;

const newStore = (options: RedisLockStoreOptions = {}): RedisLockStore => suiteStore(suite, { placeTtl: TTL, ...options });

/** A waiter's store: no wake-up channel, every call logged and open to a hook. */
const intercepted = (): InterceptStore => new InterceptStore(newStore({ wakeUp: false }));

const newLocker = (options: LockerOptions) => recordedLocker({ ttl: TTL, renew: false, ...options }, suite.closers);

/** `promise`, or a rejection naming `what` if it does not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timeout = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timeout));
}

/** A retry function that polls every 50 ms until `stop()`, then completes without emitting (the waiter gives up). */
function stoppable(): { retry: () => Observable<unknown>; stop: () => void } {
  let stopped = false;
  return {
    retry: () => (stopped ? EMPTY : timer(50)),
    stop: () => {
      stopped = true;
    },
  };
}

/** What an acquisition ended with, as a promise that never rejects. */
const outcome = (lease: Promise<Lease>): Promise<Lease | unknown> => lease.catch((e: unknown) => e);

/**
 * H holds `key`; W (an intercepted store, its retry function stoppable) waits for it in the Redis
 * line; X, another locker, waits behind W when `withX`.
 */
async function waiterInLine(key: string, opts: { withX?: boolean; subscribe?: boolean; w?: LockerOptions } = {}) {
  const lockKey = `lock:${key}`;
  const { locker: h } = newLocker({ store: newStore() });
  const hLease = await firstValueFrom(h.acquire(key));
  const ws = intercepted();
  const { locker: w, events: wEvents } = newLocker({ store: ws, ...opts.w });
  const policy = stoppable();
  const wOptions = { retry: policy.retry, waitTimeout: 30_000 };
  let wResult: Promise<Lease | unknown> | undefined;
  let wSub: Subscription | undefined;
  const wLeases: Lease[] = [];
  const wErrors: unknown[] = [];
  if (opts.subscribe === true) wSub = w.acquire(key, wOptions).subscribe({ next: (l) => wLeases.push(l), error: (e: unknown) => wErrors.push(e) });
  else wResult = outcome(firstValueFrom(w.acquire(key, wOptions)));
  await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 1, 5_000, 5, 'W in the line');
  const wToken = (await lineOf(suite.admin, lockKey))[0]!.token;
  let xLease: Promise<Lease> | undefined;
  if (opts.withX === true) {
    const { locker: x } = newLocker({ store: newStore() });
    xLease = firstValueFrom(x.acquire(key, { waitTimeout: 60_000 }));
    void xLease.catch(() => undefined);
    await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 2, 5_000, 5, 'X in the line behind W');
  }
  return { lockKey, h, hLease, ws, w, wEvents, wOptions, policy, wResult, wSub, wLeases, wErrors, wToken, xLease };
}

/** X (another process) queues alone behind H; at H's release it takes the key at once: no dead place is left ahead of it. */
async function nextTakesAtOnce(key: string, lockKey: string, hLease: Lease): Promise<void> {
  const { locker: x } = newLocker({ store: newStore() });
  const xLease = firstValueFrom(x.acquire(key, { waitTimeout: 60_000 }));
  await eventually(async () => (await lineOf(suite.admin, lockKey)).length === 1, 5_000, 5, 'X in the line');
  expect(await hLease.release()).toBe(true);
  const xHeld = await within(xLease, PROMPT, 'X takes the key at once');
  expect(await suite.admin.get(lockKey)).toBe(xHeld.token);
  expect(await xHeld.release()).toBe(true);
}

// ─── the retry function stops while the waiter is in the line (policyStopped) ───────────────────

/**
 * Protects policyStopped's leave and what it does with a leave that finds the key handed over: the
 * first condition (`owner.behind > 0 || queue === undefined || (place === undefined && !queueing)`)
 * must be false for a lone waiter in line, so the session leaves the line itself and, when the key
 * was handed to it just before, holds it (`if (left.granted) this.won(...)`) — with the leave's
 * fence — rather than timing out and giving back a key it was handed.
 */
it('a lone waiter in line whose retry function stops, handed the key just before its leave: it holds the key, with the leave’s fence', async () => {
  const { lockKey, hLease, ws, wEvents, policy, wResult, wToken } = await waiterInLine('leave-granted');
  let released: boolean | undefined;
  ws.hook = async (call) => {
    // the holder's release hands the key to W, first in line, just before W's leave reaches Redis
    if (call.op === 'leave' && released === undefined) released = await hLease.release();
  };
  policy.stop();
  const lease = (await within(wResult!, PROMPT * 2, 'W’s acquisition ends')) as Lease;
  expect(released).toBe(true);
  expect(isLockTimeoutError(lease)).toBe(false);
  expect(lease.token).toBe(wToken);
  const leaves = ws.calls('leave');
  expect(leaves).toHaveLength(1);
  expect(leaves[0]!.result).toMatchObject({ granted: true, fence: lease.fence });
  expect(lease.fence).toBeGreaterThan(hLease.fence);
  expect(await suite.admin.get(lockKey)).toBe(wToken);
  expect(wEvents.filter((e) => e.type === 'timed-out' || e.type === 'abandoned-released')).toEqual([]);
  expect(ws.calls('release')).toEqual([]);
  expect(await lease.release()).toBe(true);
});

/**
 * Protects the leave's not-granted branch (`owner.headGivesUp(); this.attempt();`): the waiter
 * times out at once (headGivesUp), and the session then ends (the attempt finds nobody waiting),
 * so the locker's next acquisition of the key starts a session of its own rather than joining a
 * session that no longer attempts anything. The line is left: the holder's release reaches the
 * next waiter at once.
 */
it('a lone waiter in line whose retry function stops: it leaves the line and times out; the locker and others take the key at once afterwards', async () => {
  const { lockKey, hLease, ws, w, policy, wResult, wToken, xLease } = await waiterInLine('leave-refused', { withX: true });
  policy.stop();
  const error = await within(wResult!, PROMPT * 2, 'W times out once its retry function stops');
  expect(isLockTimeoutError(error)).toBe(true);
  const leaves = ws.calls('leave');
  expect(leaves).toHaveLength(1);
  expect(leaves[0]!.result).toEqual({ granted: false });
  expect((await lineOf(suite.admin, lockKey)).map((p) => p.token)).not.toContain(wToken);
  // The locker waits again for the key (a new session): it takes it after X
  const again = firstValueFrom(w.acquire('leave-refused', { waitTimeout: 60_000 }));
  expect(await hLease.release()).toBe(true);
  const x = await within(xLease!, PROMPT, 'X, next in line, takes the key');
  expect(await suite.admin.get(lockKey)).toBe(x.token);
  expect(await x.release()).toBe(true);
  const lease = await within(again, PROMPT, 'W’s locker takes the key again');
  expect(lease.token).not.toBe(wToken);
  expect(await lease.release()).toBe(true);
});

/**
 * Protects the leave's error handler (`if (!this.closed) this.fail(error)`): a leave that fails
 * ends the acquisition with the store's error, at once — not a waiter left hanging.
 */
it('a leave that fails ends the acquisition with the store error', async () => {
  const { hLease, ws, policy, wResult } = await waiterInLine('leave-fails');
  ws.hook = (call) => {
    if (call.op === 'leave') throw new Error('connection lost on the leave');
  };
  policy.stop();
  const error = await within(wResult!, PROMPT * 2, 'W fails with the leave’s error');
  expect(isLockStoreError(error)).toBe(true);
  expect(error).toMatchObject({ operation: 'leave' });
  expect(ws.calls('leave')).toHaveLength(1);
  expect(await hLease.release()).toBe(true);
});

/**
 * Protects the leave's `late` handler (`if (left.granted) this.ctx.giveBack(...)`): a leave
 * answered after commandTimeout (the acquisition failed meanwhile) that says the key was handed to
 * the session is given back at once — not left to a token nobody holds until its TTL.
 */
it('a leave answered after commandTimeout with the key handed to the waiter: the key is given back, the next waiter takes it at once', async () => {
  const { lockKey, hLease, ws, wEvents, policy, wResult, wToken, xLease } = await waiterInLine('leave-late', {
    withX: true,
    w: { commandTimeout: 1500 },
  });
  ws.hook = async (call) => {
    if (call.op !== 'leave') return;
    expect(await hLease.release()).toBe(true); // handed to W, first in line
    await sleep(3000); // past W's commandTimeout: the leave reaches Redis late
  };
  policy.stop();
  const error = await within(wResult!, PROMPT * 2, 'W fails when its leave times out');
  expect(isLockStoreError(error)).toBe(true);
  await eventually(() => ws.calls('leave')[0]?.settledAt !== undefined, 10_000, 5, 'the leave answered');
  expect(ws.calls('leave')[0]!.result).toMatchObject({ granted: true });
  const x = await within(xLease!, PROMPT, 'X takes the key given back by W');
  expect(await suite.admin.get(lockKey)).toBe(x.token);
  expect(ws.calls('release').map((c) => ({ token: c.token, result: c.result }))).toEqual([{ token: wToken, result: true }]);
  expect(wEvents.filter((e) => e.type === 'abandoned-released')).toEqual([{ type: 'abandoned-released', key: 'leave-late', token: wToken, deleted: true }]);
  expect(await x.release()).toBe(true);
});

/**
 * Protects the give-back of a grant that reaches a session abandoned while its leave was in flight:
 * the subscriber unsubscribed, so the leave's answer comes to `late`, which gives the key back.
 * (The `closed` branch of the leave's `value` handler cannot run: every path that closes the
 * session while the leave is in flight abandons the call, so its answer goes to `late`.)
 */
it('a waiter unsubscribed while its leave is in flight, handed the key meanwhile: the key is given back, the next waiter takes it at once', async () => {
  const { lockKey, hLease, ws, wEvents, policy, wSub, wLeases, wErrors, wToken, xLease } = await waiterInLine('leave-abandoned', {
    withX: true,
    subscribe: true,
  });
  ws.hook = async (call) => {
    if (call.op !== 'leave') return;
    await sleep(0); // (the session holds the call by now)
    wSub!.unsubscribe(); // nobody waits any more…
    expect(await hLease.release()).toBe(true); // …and the key is handed to W's place, first in line
  };
  policy.stop();
  await eventually(() => ws.calls('leave')[0]?.settledAt !== undefined, 10_000, 5, 'the leave answered');
  expect(ws.calls('leave')[0]!.result).toMatchObject({ granted: true });
  const x = await within(xLease!, PROMPT, 'X takes the key given back by W');
  expect(await suite.admin.get(lockKey)).toBe(x.token);
  expect(wLeases).toEqual([]);
  expect(wErrors).toEqual([]);
  expect(ws.calls('leave')).toHaveLength(1);
  expect(ws.calls('release').map((c) => ({ token: c.token, result: c.result }))).toEqual([{ token: wToken, result: true }]);
  expect(wEvents.filter((e) => e.type === 'abandoned-released')).toEqual([
    { type: 'abandoned-released', key: 'leave-abandoned', token: wToken, deleted: true },
  ]);
  expect(await x.release()).toBe(true);
});

/**
 * Protects the first disjunct of policyStopped's condition (`owner.behind > 0`): when the first
 * waiter's retry function stops and another local waiter waits behind it, the session keeps its
 * place in the Redis line for that one (no leave, which would send it to the back, behind X).
 */
it('a waiter whose retry function stops with another local waiter behind it: the session keeps its place for that one', async () => {
  const { lockKey, hLease, ws, w, policy, wResult, wToken, xLease } = await waiterInLine('leave-behind', { withX: true });
  const w2 = firstValueFrom(w.acquire('leave-behind', { waitTimeout: 60_000 }));
  void w2.catch(() => undefined);
  await sleep(100);
  policy.stop();
  expect(isLockTimeoutError(await within(wResult!, PROMPT * 2, 'W1 times out'))).toBe(true);
  // (a leave, and the attempt for W2 that would follow it, would both be answered by now)
  await sleep(200);
  await eventually(() => ws.inFlight === 0, 5_000, 5, 'W’s calls answered');
  expect(ws.calls('leave')).toEqual([]);
  expect((await lineOf(suite.admin, lockKey)).map((p) => p.token)[0]).toBe(wToken);
  let xHeld = false;
  void xLease!.then(() => (xHeld = true));
  expect(await hLease.release()).toBe(true);
  const lease = await within(w2, PROMPT, 'W2 takes the key, handed to the session’s place');
  expect(lease.token).toBe(wToken);
  expect(xHeld).toBe(false);
  expect(await lease.release()).toBe(true);
  expect(await (await within(xLease!, PROMPT, 'X next')).release()).toBe(true);
});

/**
 * Protects the third disjunct of policyStopped's condition (`place === undefined && !queueing`): a
 * retry function that stops before the session ever took a place in the line gives up without a
 * leave (there is nothing to leave: no needless round trip before the time-out).
 */
it('a retry function that stops before the waiter took a place: it times out with no leave', async () => {
  const { locker: h } = newLocker({ store: newStore() });
  const hLease = await firstValueFrom(h.acquire('never-in-line'));
  const ws = intercepted();
  const { locker: w } = newLocker({ store: ws });
  const error = await within(outcome(firstValueFrom(w.acquire('never-in-line', { retry: () => EMPTY }))), PROMPT, 'W times out');
  expect(isLockTimeoutError(error)).toBe(true);
  await sleep(200);
  expect(ws.log.map((c) => c.op)).toEqual(['tryAcquire']);
  expect(await hLease.release()).toBe(true);
});

/**
 * Protects the second disjunct of policyStopped's condition (`queue === undefined`): a store
 * without a line is never asked to leave one, even if its refusals say "queued" (a custom store):
 * the waiter times out, it does not fail on a leave the store does not have.
 */
it('a store without a line whose refusals say "queued": a retry function that stops makes the waiter time out, with no leave', async () => {
  const inner = newStore();
  const lineless: LockStore = {
    async tryAcquire(key, token, ttl, fences): Promise<AcquireResult> {
      const answer = await inner.tryAcquire(key, token, ttl, fences);
      return answer.acquired ? answer : { ...answer, queued: true, placeTtl: TTL };
    },
    release: (key, token) => inner.release(key, token),
    extend: (key, token, ttl) => inner.extend(key, token, ttl),
  };
  const { locker: h } = newLocker({ store: newStore() });
  const hLease = await firstValueFrom(h.acquire('lineless'));
  const { locker: w } = newLocker({ store: lineless });
  const error = await within(outcome(firstValueFrom(w.acquire('lineless', { retry: () => EMPTY }))), PROMPT, 'W times out');
  expect(isLockTimeoutError(error)).toBe(true);
  expect(await hLease.release()).toBe(true);
});

// ─── a direct attempt that failed or timed out, which the store ran anyway ────────────────────────

/**
 * Protects attemptFailed's `if (attempt.mode === 'try') this.giveBackWhenSettled = true` and
 * attemptSettled's give-back by token: a direct attempt (an uncontended locker's first) that the
 * store ran but whose answer was lost fails the acquisition, and the key it may have taken is given
 * back once the store settled the call — the next locker takes it at once, not after its TTL.
 */
it('a direct attempt that the store ran but whose answer was lost: the key is given back by token', async () => {
  const lockKey = 'lock:lost-answer';
  const ws = intercepted();
  const ran = ws.inner.tryAcquire.bind(ws.inner);
  ws.inner.tryAcquire = async (...args) => {
    await ran(...args); // Redis grants the key…
    throw new Error('connection lost before the answer'); // …and the answer is lost
  };
  const { locker: u, events: uEvents } = newLocker({ store: ws });
  const error = await within(outcome(firstValueFrom(u.acquire('lost-answer'))), PROMPT, 'U fails');
  expect(isLockStoreError(error)).toBe(true);
  const uToken = ws.calls('tryAcquire')[0]!.token;
  const { locker: x } = newLocker({ store: newStore() });
  const xLease = await within(firstValueFrom(x.acquire('lost-answer', { waitTimeout: 60_000 })), PROMPT, 'X takes the key U gave back');
  expect(await suite.admin.get(lockKey)).toBe(xLease.token);
  expect(ws.calls('release').map((c) => ({ token: c.token, result: c.result }))).toEqual([{ token: uToken, result: true }]);
  expect(uEvents.filter((e) => e.type === 'abandoned-released')).toEqual([{ type: 'abandoned-released', key: 'lost-answer', token: uToken, deleted: true }]);
  expect(await xLease.release()).toBe(true);
});

/**
 * Protects LeaseKeeper.releaseAbandoned's rules for a give-back whose grant was only possible
 * (`unsure`: `deleted || !unsure` and `!unsure`): after a direct attempt whose answer was lost, the
 * give-back by token is sent whatever the store did, but it is reported only when the key was the
 * waiter's. Here another process held the key, so the store refused the attempt: the give-back finds
 * nothing, says so to nobody, and does not touch the holder's key; and when the give-back fails too
 * (the store still unreachable), that is no `release-failed` of a lock the waiter never had.
 */
it('a direct attempt whose answer was lost while another process held the key: the give-back is sent, touches nothing and reports nothing', async () => {
  const lockKey = 'lock:lost-refusal';
  const { locker: h } = newLocker({ store: newStore() });
  const hLease = await firstValueFrom(h.acquire('lost-refusal'));
  for (const releaseFails of [false, true]) {
    const ws = intercepted();
    const ran = ws.inner.tryAcquire.bind(ws.inner);
    ws.inner.tryAcquire = async (...args) => {
      expect((await ran(...args)).acquired).toBe(false); // Redis refuses: H holds the key…
      throw new Error('connection lost before the answer'); // …and the answer is lost
    };
    if (releaseFails) ws.inner.release = () => Promise.reject(new Error('connection lost again'));
    const { locker: u, events: uEvents } = newLocker({ store: ws });
    const error = await within(outcome(firstValueFrom(u.acquire('lost-refusal'))), PROMPT, 'U fails');
    expect(isLockStoreError(error)).toBe(true);
    const uToken = ws.calls('tryAcquire')[0]!.token;
    await eventually(() => ws.calls('release')[0]?.settledAt !== undefined, PROMPT, 5, 'the give-back settled');
    await sleep(100); // (an event would follow its call's answer in the same tick)
    const release = ws.calls('release')[0]!;
    expect(release.token).toBe(uToken);
    if (releaseFails) expect(release.error).toBeInstanceOf(Error);
    else expect(release.result).toBe(false);
    expect(uEvents.filter((e) => e.type === 'abandoned-released' || e.type === 'release-failed')).toEqual([]);
    expect(await suite.admin.get(lockKey)).toBe(hLease.token);
  }
  expect(await hLease.release()).toBe(true);
});

/**
 * Protects the late grant of a direct attempt (attemptAnsweredLate, and `&& !this.lateGrant` in
 * attemptSettled): an attempt that timed out (commandTimeout) but that the store ran later with a
 * grant is given back when its answer comes — and once only: the give-back by token that follows a
 * timed-out direct attempt is not sent a second time.
 */
it('a direct attempt answered after commandTimeout with a grant: the key is given back, once', async () => {
  const lockKey = 'lock:late-grant';
  const ws = intercepted();
  let delayed = false;
  ws.hook = async (call) => {
    if (call.op === 'tryAcquire' && !delayed) {
      delayed = true;
      await sleep(2500); // past commandTimeout, then Redis grants the key
    }
  };
  const { locker: u, events: uEvents } = newLocker({ store: ws, commandTimeout: 1000 });
  const error = await within(outcome(firstValueFrom(u.acquire('late-grant'))), PROMPT * 2, 'U fails when its attempt times out');
  expect(isLockStoreError(error)).toBe(true);
  await eventually(() => ws.calls('tryAcquire')[0]?.settledAt !== undefined, 10_000, 5, 'the attempt answered');
  const attempt = ws.calls('tryAcquire')[0]!;
  expect(attempt.result).toMatchObject({ acquired: true });
  await eventually(() => ws.calls('release').length > 0 && ws.inFlight === 0, PROMPT, 5, 'the late grant given back');
  await sleep(300); // (a second give-back would be sent in the same tick as the first)
  expect(ws.calls('release').map((c) => ({ token: c.token, result: c.result }))).toEqual([{ token: attempt.token, result: true }]);
  expect(await suite.admin.get(lockKey)).toBeNull();
  expect(uEvents.filter((e) => e.type === 'abandoned-released')).toEqual([
    { type: 'abandoned-released', key: 'late-grant', token: attempt.token, deleted: true },
  ]);
});

// ─── leaving the line when the waiter is abandoned with an attempt in flight (leaveLine) ─────────

/**
 * Protects leaveLine's `if (this.lateGrant) return;`: a waiter abandoned while its attempt in line
 * was in flight, whose attempt then took the key (handed to it meanwhile), gives the key back in
 * `late` — and sends no leave after it (there is no place left, and the key went back already).
 */
it('a waiter abandoned with an attempt in line in flight that then takes the key: the key is given back, and no leave follows', async () => {
  const { lockKey, hLease, ws, wSub, wLeases, wToken, xLease } = await waiterInLine('abandoned-grant', { withX: true, subscribe: true });
  let armed = true;
  ws.hook = async (call) => {
    if (call.op !== 'tryAcquireInLine' || !armed) return;
    armed = false;
    await sleep(0); // (the session holds the call by now)
    wSub!.unsubscribe(); // nobody waits any more, this attempt in flight…
    expect(await hLease.release()).toBe(true); // …which the key is handed to, first in line
  };
  await eventually(() => !armed, 5_000, 5, 'an attempt in line held back');
  const x = await within(xLease!, PROMPT, 'X takes the key given back by W');
  expect(await suite.admin.get(lockKey)).toBe(x.token);
  expect(wLeases).toEqual([]);
  const attempt = ws.calls('tryAcquireInLine').at(-1)!;
  expect(attempt.result).toMatchObject({ acquired: true });
  await eventually(() => ws.inFlight === 0, PROMPT, 5, 'W’s calls answered');
  await sleep(300);
  expect(ws.calls('release').map((c) => ({ token: c.token, result: c.result }))).toEqual([{ token: wToken, result: true }]);
  expect(ws.calls('leave')).toEqual([]);
  expect(await x.release()).toBe(true);
});

/**
 * Protects leaveLine's `if (this.unsettled > 0) this.afterSettled = send` (and callSettled's count):
 * a waiter abandoned while its attempt in line is held on its way to Redis leaves the line only
 * once that attempt was answered — a leave sent at once would run first, the attempt would then
 * put the place back, and the holder's release would hand the key to a dead token.
 */
it('a waiter abandoned with an attempt in line held on its way: the leave goes after it, and the next waiter takes the key at once', async () => {
  const { lockKey, hLease, ws, wSub, wToken, xLease } = await waiterInLine('abandoned-held', { withX: true, subscribe: true });
  let armed = true;
  ws.hook = async (call) => {
    if (call.op !== 'tryAcquireInLine' || !armed) return;
    armed = false;
    await sleep(0); // (the session holds the call by now)
    wSub!.unsubscribe();
    await sleep(500); // the attempt reaches Redis after the abandon
  };
  await eventually(() => ws.calls('leave')[0]?.settledAt !== undefined, 5_000, 5, 'W’s leave answered');
  const attempt = ws.calls('tryAcquireInLine').at(-1)!;
  const leave = ws.calls('leave')[0]!;
  expect(leave.acquiresInFlight).toBe(0);
  expect(leave.calledAt).toBeGreaterThanOrEqual(attempt.settledAt!);
  expect((await lineOf(suite.admin, lockKey)).map((p) => p.token)).not.toContain(wToken);
  expect(await hLease.release()).toBe(true);
  const x = await within(xLease!, PROMPT, 'X takes the key at once');
  expect(await suite.admin.get(lockKey)).toBe(x.token);
  expect(ws.calls('leave')).toHaveLength(1);
  expect(await x.release()).toBe(true);
});

/**
 * Protects policyStopped's `this.unsettled++` (its leave counts as a call the store has not
 * settled): a local waiter that joins while the leave is in flight gets the session's next attempt
 * once the leave found nothing; abandoned while that attempt is held on its way, the session leaves
 * the line only after it. Miscounted, the leave would go at once, run first, and the attempt would
 * put back a place nobody holds.
 */
it('a waiter that joins while the leave is in flight, abandoned with its attempt held on its way: the leave goes after that attempt', async () => {
  const key = 'joined-during-leave';
  const { lockKey, hLease, ws, w, policy, wResult, wToken } = await waiterInLine(key);
  let w3: Subscription | undefined;
  let held = false;
  ws.hook = async (call) => {
    if (call.op === 'leave' && w3 === undefined) {
      await sleep(0);
      w3 = w.acquire(key, { waitTimeout: 60_000 }).subscribe({ error: () => undefined }); // joins behind W1
      return;
    }
    if (call.op === 'tryAcquireInLine' && w3 !== undefined && !held) {
      held = true;
      await sleep(0); // (the session holds the call by now)
      w3.unsubscribe();
      await sleep(500); // the attempt reaches Redis after the abandon
    }
  };
  policy.stop();
  expect(isLockTimeoutError(await within(wResult!, PROMPT * 2, 'W1 times out'))).toBe(true);
  await eventually(() => held && ws.calls('leave').length === 2 && ws.inFlight === 0, 5_000, 5, 'W3’s attempt and the leave after it answered');
  expect(ws.calls('leave')[0]!.result).toEqual({ granted: false });
  const attempt = ws.calls('tryAcquireInLine').at(-1)!;
  const leave = ws.calls('leave')[1]!;
  expect(leave.acquiresInFlight).toBe(0);
  expect(leave.calledAt).toBeGreaterThanOrEqual(attempt.settledAt!);
  expect((await lineOf(suite.admin, lockKey)).map((p) => p.token)).not.toContain(wToken);
  await nextTakesAtOnce(key, lockKey, hLease);
});

/**
 * Protects attemptFailed's `attempt.mode === 'try'`: an attempt in line that fails ends the
 * acquisition with the store's error and the session leaves the line (after that attempt settled)
 * — the leave is what gives back a key handed to it, so no blind give-back by token is sent too.
 * The next waiter takes the key at once at the holder's release.
 */
it('an attempt in line that fails: the acquisition fails, the session leaves the line with no give-back by token, the next waiter takes the key at once', async () => {
  const key = 'queued-attempt-fails';
  const { lockKey, hLease, ws, wResult, wToken } = await waiterInLine(key);
  ws.hook = (call) => {
    if (call.op === 'tryAcquireInLine') throw new Error('connection lost on the attempt');
  };
  const error = await within(wResult!, PROMPT, 'W fails with the attempt’s error');
  expect(isLockStoreError(error)).toBe(true);
  await eventually(() => ws.calls('leave')[0]?.settledAt !== undefined, PROMPT, 5, 'W leaves the line');
  await sleep(200);
  expect(ws.calls('leave')).toHaveLength(1);
  expect(ws.calls('leave')[0]!.acquiresInFlight).toBe(0);
  expect(ws.calls('release')).toEqual([]);
  expect((await lineOf(suite.admin, lockKey)).map((p) => p.token)).not.toContain(wToken);
  await nextTakesAtOnce(key, lockKey, hLease);
});
