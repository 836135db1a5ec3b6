/**
 * The guards of the lease and fence state machines, tested on the parts themselves: each test
 * fails when its guard is deleted or inverted (the survivors of `npm run mutation` that guard
 * validity, release-once, ownership and fence order). The parts are driven through the narrow
 * interfaces they are built on (a StoreLease sees its keeper only as a `StoreLeaseOwner`), so the
 * owner below records what the lease asks for; no store is imitated.
 */
import { filter, firstValueFrom, lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { LockStoreError } from '../../src/errors/errors.js';
import { FenceBlock, fencesToReserve } from '../../src/engine/fencing/FenceBlock.js';
import type { HolderFacts } from '../../src/engine/events/EventReporter.js';
import { StoreLease, type PassedHolder, type StoreLeaseOwner } from '../../src/engine/lease/StoreLease.js';
import type { DueKind } from '../../src/engine/lease/LeaseTimers.js';
import { createLocker, MemoryLockStore } from '../../src/index.js';
import type { ExtendOutcome } from '../../src/store/LockStore.js';
import { RecordingStore, recordingLocker } from '../support/recordingStore.js';

describe('FenceBlock: a block hands out exactly its fences, in order', () => {
  it('take() gives first+1 … first+size−1, then undefined for good; left counts down to 0', () => {
    const block = new FenceBlock(100, 4);
    expect(block.left).toBe(3);
    expect([block.take(), block.take(), block.take()]).toEqual([101, 102, 103]);
    expect(block.left).toBe(0);
    expect(block.take()).toBeUndefined();
    expect(block.take()).toBeUndefined();
    expect(block.left).toBe(0);
  });

  it('a block of one fence has nothing for a successor', () => {
    const block = new FenceBlock(7, 1);
    expect(block.left).toBe(0);
    expect(block.take()).toBeUndefined();
  });

  it('fencesToReserve: 1 without passes; 1 + maxPasses with others waiting; else a spare of 16 in all, never more than 1 + maxPasses', () => {
    expect(fencesToReserve(0, 0)).toBe(1);
    expect(fencesToReserve(5, 0)).toBe(1);
    expect(fencesToReserve(1, 64)).toBe(65);
    expect(fencesToReserve(0, 64)).toBe(16);
    expect(fencesToReserve(0, 3)).toBe(4);
    expect(fencesToReserve(0, 15)).toBe(16);
  });
});

/** Records what a StoreLease asks of its keeper. */
class Keeper implements StoreLeaseOwner {
  readonly scheduled: Array<{ kind: DueKind; dueAt: number }> = [];
  readonly settled: Array<{ passes: readonly PassedHolder[]; outcome: 'passed' | 'gone' | LockStoreError }> = [];
  extendAnswer: ExtendOutcome = 'extended';
  extendCalls = 0;
  renewedCount = 0;
  async extendLease(): Promise<ExtendOutcome> {
    this.extendCalls++;
    return this.extendAnswer;
  }
  schedule(_lease: StoreLease, kind: DueKind, dueAt: number): void {
    this.scheduled.push({ kind, dueAt });
  }
  unschedule(): void {}
  renewed(): void {
    this.renewedCount++;
  }
  renewFailures = 0;
  renewFailed(): void {
    this.renewFailures++;
  }
  passesSettled(passes: readonly PassedHolder[], outcome: 'passed' | 'gone' | LockStoreError): void {
    this.settled.push({ passes, outcome });
  }
}

const holder = (n: number): HolderFacts => ({ key: 'k', token: 't', id: `t:${n}`, fence: n, acquiredAt: 0 });

function lease(keeper: Keeper, ttl = 1000, renew: false | { interval: number | undefined } = { interval: undefined }, wantedTtl = ttl): StoreLease {
  const l = new StoreLease(keeper, 'k', 'k', 't', ttl, performance.now(), wantedTtl, renew);
  const lost: unknown[] = [];
  l.onLost = (e) => lost.push(e);
  return l;
}

describe('StoreLease: validity and ownership', () => {
  it('a lease taken over (the store says so) is not valid any more, even well before its deadline', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const now = performance.now();
    expect(l.valid(now)).toBe(true);
    expect(l.extended('taken', now, 1000)).toBe(false);
    expect(l.isHeld).toBe(false);
    expect(l.valid(now)).toBe(false);
    expect(l.checkValid(now)).toBe(false);
  });

  it('a lease given back is not valid any more, and due timers ask nothing of the store', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.end();
    const now = performance.now();
    expect(l.valid(now)).toBe(false);
    expect(l.checkValid(now)).toBe(false);
    const renewals: unknown[] = [];
    l.due('renew', now, renewals as never);
    expect(renewals).toEqual([]);
  });

  it('an answer to an extend call is ignored once the lease is no longer held: it is not revived', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.end();
    expect(l.extended('extended', performance.now(), 5000)).toBe(false);
    expect(l.isHeld).toBe(false);
    expect(keeper.renewedCount).toBe(0);
  });

  it('extend() of a lease past its validity answers false and sends nothing', async () => {
    const keeper = new Keeper();
    const l = lease(keeper, 10, false);
    await new Promise((r) => setTimeout(r, 15));
    expect(await l.extend(1000)).toBe(false);
    expect(keeper.extendCalls).toBe(0);
    expect(l.isHeld).toBe(false);
  });

  it("extend() answered 'taken' or 'gone' resolves false and loses the lease", async () => {
    for (const answer of ['taken', 'gone'] as const) {
      const keeper = new Keeper();
      const l = lease(keeper);
      keeper.extendAnswer = answer;
      expect(await l.extend(1000)).toBe(false);
      expect(l.isHeld).toBe(false);
    }
  });

  it('an extension sets the validity from when the call was sent, not from when it was answered', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const sentAt = performance.now() - 500;
    expect(l.extended('extended', sentAt, 1000)).toBe(true);
    expect(l.validUntil).toBeCloseTo(sentAt + 1000 - (10 + 2), 6);
  });

  it("renewals keep the TTL of the latest manual extend(ttl) sent, whatever order the answers are handled in; a renewal's answer sets only the key's TTL", () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const first = performance.now() - 20;
    const second = first + 10;
    expect(l.extended('extended', second, 2000, true)).toBe(true);
    expect(l.extended('extended', first, 5000, true)).toBe(true);
    expect(l.renewTtl).toBe(2000);
    expect(l.extended('extended', second + 5, 700)).toBe(true);
    expect({ ttl: l.ttl, renewTtl: l.renewTtl }).toEqual({ ttl: 700, renewTtl: 2000 });
    // two sent in the same instant: answered in the order sent, the later one stands
    const same = second + 20;
    l.extended('extended', same, 3000, true);
    l.extended('extended', same, 4000, true);
    expect(l.renewTtl).toBe(4000);
  });

  it('two extends sent in one instant (the clock reads the same), answered out of order: the deadline stays within the shorter one the store ran last', async () => {
    // (Sendings were told apart by their times only: with equal times, the longer extend's answer,
    // handled last, was booked against the shorter call and set the deadline past the key's expiry.)
    const answers: Array<(outcome: ExtendOutcome) => void> = [];
    const keeper = new Keeper();
    keeper.extendLease = () => new Promise<ExtendOutcome>((resolve) => answers.push(resolve));
    const instant = performance.now();
    const clock = vi.spyOn(performance, 'now').mockReturnValue(instant);
    try {
      const l = lease(keeper, 1000);
      const longer = l.extend(1000);
      const shorter = l.extend(100); // the store runs it last: the key ends ~100 ms after the instant
      expect(answers).toHaveLength(2);
      answers[1]!('extended');
      expect(await shorter).toBe(true);
      answers[0]!('extended');
      expect(await longer).toBe(true);
      expect(l.validUntil).toBeLessThanOrEqual(instant + 100);
    } finally {
      clock.mockRestore();
    }
  });

  it('a renewal failure on a lease past its validity loses it: no retry, no renew-failed', () => {
    const keeper = new Keeper();
    const l = new StoreLease(keeper, 'k', 'k', 't', 100, performance.now() - 200, 100, { interval: undefined });
    l.renewFailed(new LockStoreError('k', 'extend', 'down'), performance.now() - 150);
    expect(l.isHeld).toBe(false);
    expect(keeper.renewFailures).toBe(0);
    expect(keeper.scheduled).toEqual([]);
  });

  it('a failure of a call sent before the one whose answer set the deadline changes nothing', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const sent = performance.now();
    expect(l.extended('extended', sent, 1000)).toBe(true);
    const scheduled = [...keeper.scheduled];
    const until = l.validUntil;
    l.renewFailed(new LockStoreError('k', 'extend', 'timed out'), sent - 1);
    expect({ failures: keeper.renewFailures, scheduled: keeper.scheduled, until: l.validUntil }).toEqual({ failures: 0, scheduled, until });
    // one sent at the same moment or later is news
    l.renewFailed(new LockStoreError('k', 'extend', 'timed out'), sent);
    expect(keeper.renewFailures).toBe(1);
  });

  it('a renewal that failed is retried while the lease is valid, then only its deadline is watched', () => {
    const keeper = new Keeper();
    const l = lease(keeper, 300);
    keeper.scheduled.length = 0;
    l.renewFailed(new LockStoreError('k', 'extend', 'down'), performance.now());
    expect(keeper.scheduled.at(-1)?.kind).toBe('renew');
    expect(keeper.scheduled.at(-1)!.dueAt).toBeLessThan(l.validUntil);
    // a retry that would come after the validity is no retry: the deadline is what is left
    // (validity 988 ms from a grant 985 ms ago: 3 ms left, and a retry would come a third of the 333 ms interval later)
    const short = new StoreLease(keeper, 'k', 'k', 't', 1000, performance.now() - 985, 1000, { interval: undefined });
    keeper.scheduled.length = 0;
    short.renewFailed(new LockStoreError('k', 'extend', 'down'), performance.now());
    expect(keeper.scheduled.map((s) => s.kind)).toEqual(['deadline']);
  });

  it('a lease whose key came with a TTL not its own, without renewal, is extended once at start', () => {
    const keeper = new Keeper();
    const l = lease(keeper, 200, false, 1000);
    keeper.scheduled.length = 0;
    l.start();
    expect(keeper.scheduled).toEqual([{ kind: 'renew', dueAt: expect.any(Number) }]);
    const plain = lease(keeper, 1000, false, 1000);
    keeper.scheduled.length = 0;
    plain.start();
    expect(keeper.scheduled.map((s) => s.kind)).toEqual(['deadline']);
  });

  it("a lease renewed once and then left past its validity is lost as 'expired', not 'store-unreachable' (the renewal was answered)", async () => {
    const keeper = new Keeper();
    const l = lease(keeper, 20, { interval: 1000 });
    const reasons: string[] = [];
    l.onLost = (e) => reasons.push(e.reason);
    l.renewing(performance.now());
    expect(l.extended('extended', performance.now(), 20)).toBe(true);
    await new Promise((r) => setTimeout(r, 25));
    expect(l.checkValid(performance.now())).toBe(false);
    expect(reasons).toEqual(['expired']);
    // and one whose renewal was never answered is lost as 'store-unreachable'
    const pending = lease(keeper, 20, { interval: 1000 });
    const why: string[] = [];
    pending.onLost = (e) => why.push(e.reason);
    pending.renewing(performance.now());
    await new Promise((r) => setTimeout(r, 25));
    expect(pending.checkValid(performance.now())).toBe(false);
    expect(why).toEqual(['store-unreachable']);
  });

  it('a deadline that comes due is no renewal: it asks nothing of the store and watches the deadline again', () => {
    const keeper = new Keeper();
    const l = lease(keeper, 1000);
    keeper.scheduled.length = 0;
    const renewals: unknown[] = [];
    l.due('deadline', performance.now(), renewals as never);
    expect(renewals).toEqual([]);
    expect(keeper.scheduled.map((x) => x.kind)).toEqual(['deadline']);
    l.due('renew', performance.now(), renewals as never);
    expect(renewals).toEqual([l]);
  });

  it("a handed-over key's shorter TTL sets the renewal schedule (a third of it), not the TTL the holder asked for", () => {
    const keeper = new Keeper();
    const acquiredAt = performance.now();
    const l = new StoreLease(keeper, 'k', 'k', 't', 300, acquiredAt, 3000, { interval: undefined });
    keeper.scheduled.length = 0;
    l.start(acquiredAt);
    expect(keeper.scheduled).toHaveLength(1);
    expect(keeper.scheduled[0]!.kind).toBe('renew');
    expect(keeper.scheduled[0]!.dueAt).toBeLessThanOrEqual(acquiredAt + 100);
  });

  it('abandon() loses a held lease with the reason given, and does nothing to one already ended', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const lost: Array<{ reason: string }> = [];
    l.onLost = (e) => lost.push(e);
    l.abandon('locker-closed');
    expect(l.isHeld).toBe(false);
    expect(lost.map((e) => e.reason)).toEqual(['locker-closed']);
    const ended = lease(keeper);
    const told: unknown[] = [];
    ended.onLost = (e) => told.push(e);
    ended.end();
    ended.abandon('locker-closed');
    expect(told).toEqual([]);
  });
});

describe('StoreLease: a pass is reported only as the store confirmed it', () => {
  it('only answers to calls sent after a pass confirm it; an earlier call settles nothing', async () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    const before = performance.now();
    await new Promise((r) => setTimeout(r, 2));
    l.passed(holder(1), true);
    await new Promise((r) => setTimeout(r, 2));
    l.passed(holder(2), true);
    const between = (l as unknown as { unconfirmed: PassedHolder[] }).unconfirmed[1]!.passedAt - 0.5;
    l.extended('extended', before, 1000); // sent before both passes
    expect(keeper.settled).toEqual([]);
    l.extended('extended', between, 1000); // sent after the first pass only
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'passed']]);
    l.released(true);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([
      [[1], 'passed'],
      [[2], 'passed'],
    ]);
  });

  it("the final release settles the passes: true → 'passed', false → 'gone', an error → that error", () => {
    const error = new LockStoreError('k', 'release', 'down');
    for (const [answer, outcome] of [
      [true, 'passed'],
      [false, 'gone'],
      [error, error],
    ] as const) {
      const keeper = new Keeper();
      const l = lease(keeper);
      l.passed(holder(1), true);
      l.passed(holder(2), true);
      l.released(answer);
      expect(keeper.settled).toHaveLength(1);
      expect(keeper.settled[0]!.passes.map((p) => p.holder.fence)).toEqual([1, 2]);
      expect(keeper.settled[0]!.outcome).toBe(outcome);
      l.released(answer);
      expect(keeper.settled).toHaveLength(1);
    }
  });

  it('passes are not tracked when nobody observes events', () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.passed(holder(1), false);
    l.released(true);
    expect(keeper.settled).toEqual([]);
  });

  it("a release answered 'gone' while a renewal sent after a pass is still awaited: that renewal's answer settles the pass", () => {
    // (The store ran the renewal before the release — one connection runs a client's calls in order
    // — and the key was lost in between (a flush, a failover): the pass was protected to its end,
    // and the renewal's answer, read with the release's but handled after it, says so.)
    const keeper = new Keeper();
    const l = lease(keeper);
    l.passed(holder(1), true);
    const renewal = l.renewing(performance.now());
    l.passed(holder(2), true); // after the renewal went out: only the release can tell
    l.end();
    l.released(false);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[2], 'gone']]);
    l.extended('extended', renewal, 1000);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([
      [[2], 'gone'],
      [[1], 'passed'],
    ]);
  });

  it("a renewal sent after a pass, answered after the lease was given back but before the release's answer: it confirms the pass", () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.passed(holder(1), true);
    const renewal = l.renewing(performance.now());
    l.passed(holder(2), true); // after the renewal went out: the release's answer tells
    l.end();
    l.extended('extended', renewal, 1000);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'passed']]);
    l.released(false);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([
      [[1], 'passed'],
      [[2], 'gone'],
    ]);
  });

  it("a release answered 'gone' while two calls sent after a pass are awaited: the pass waits for both", async () => {
    const answers: Array<(outcome: ExtendOutcome) => void> = [];
    const keeper = new Keeper();
    keeper.extendLease = () => new Promise<ExtendOutcome>((resolve) => answers.push(resolve));
    const l = lease(keeper);
    l.passed(holder(1), true);
    const renewal = l.renewing(performance.now());
    const extending = l.extend(1000);
    l.end();
    l.released(false);
    l.renewFailed(new LockStoreError('k', 'extend', 'connection reset'), renewal);
    expect(keeper.settled).toEqual([]);
    // the manual extend's answer ('extended', handled after the lease ended) confirms the pass
    answers[0]!('extended');
    expect(await extending).toBe(false);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'passed']]);
  });

  it("a release answered 'gone' while a renewal is awaited: passes made after that renewal went out are settled at once", () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.renewing(performance.now());
    l.passed(holder(1), true);
    l.end();
    l.released(false);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'gone']]);
  });

  it("a release answered 'gone' while a renewal sent after a pass is awaited, and that renewal fails: the pass is settled as the release said", () => {
    const keeper = new Keeper();
    const l = lease(keeper);
    l.passed(holder(1), true);
    const renewal = l.renewing(performance.now());
    l.end();
    l.released(false);
    expect(keeper.settled).toEqual([]);
    l.renewFailed(new LockStoreError('k', 'extend', 'connection reset'), renewal);
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'gone']]);
  });

  it("a release answered 'gone' while a manual extend sent after a pass is awaited, and that extend fails: the pass is settled as the release said", async () => {
    const fail: Array<(error: unknown) => void> = [];
    const keeper = new Keeper();
    keeper.extendLease = () => new Promise<ExtendOutcome>((_, reject) => fail.push(reject));
    const l = lease(keeper);
    l.passed(holder(1), true);
    const extending = l.extend(1000);
    l.end();
    l.released(false);
    expect(keeper.settled).toEqual([]);
    fail[0]!(new LockStoreError('k', 'extend', 'timed out'));
    await expect(extending).rejects.toThrow('timed out');
    expect(keeper.settled.map((s) => [s.passes.map((p) => p.holder.fence), s.outcome])).toEqual([[[1], 'gone']]);
  });

  it("a loss settles the passes before it as 'gone', or with the renewal's error when the store was unreachable; a close leaves them to the final release", async () => {
    const keeper = new Keeper();
    const taken = lease(keeper);
    taken.passed(holder(1), true);
    taken.extended('taken', performance.now(), 1000);
    expect(keeper.settled.map((s) => s.outcome)).toEqual(['gone']);

    const unreachable = new Keeper();
    const l = lease(unreachable, 10, { interval: 1000 });
    l.passed(holder(2), true);
    const error = new LockStoreError('k', 'extend', 'timed out');
    l.renewFailed(error, performance.now());
    await new Promise((r) => setTimeout(r, 15));
    expect(l.checkValid(performance.now())).toBe(false);
    expect(unreachable.settled.map((s) => s.outcome)).toEqual([error]);

    const silent = new Keeper();
    const stalled = lease(silent, 10, { interval: 1000 });
    stalled.passed(holder(3), true);
    stalled.renewing(performance.now());
    await new Promise((r) => setTimeout(r, 15));
    expect(stalled.checkValid(performance.now())).toBe(false);
    expect(silent.settled).toHaveLength(1);
    expect(silent.settled[0]!.outcome).toBeInstanceOf(LockStoreError);

    const closing = new Keeper();
    const closed = lease(closing);
    closed.passed(holder(4), true);
    closed.abandon('locker-closed');
    expect(closing.settled).toEqual([]);
    closed.released(true);
    expect(closing.settled.map((s) => s.outcome)).toEqual(['passed']);
  });
});

describe('HeldLease: release once, and a holder owns only its own hold', () => {
  const setup = () => recordingLocker({ ttl: 5000, cohort: { maxMs: 60_000 } });

  it('a holder that passed the lock on cannot extend the lease its successor now holds', async () => {
    const { store, locker } = setup();
    const first = await firstValueFrom(locker.acquire('k'));
    const second = firstValueFrom(locker.acquire('k'));
    expect(await first.release()).toBe(true);
    const successor = await second;
    expect(successor.token).toBe(first.token); // passed locally: one store lease
    const extendsBefore = store.count('extend');
    expect(await first.extend()).toBe(false);
    expect(store.count('extend')).toBe(extendsBefore);
    expect(successor.held).toBe(true);
    await successor.release();
  });

  it('released says whether release() was called; lost$ of a released holder completes without a value', async () => {
    const { locker } = setup();
    const lease = await firstValueFrom(locker.acquire('k'));
    const seen = lastValueFrom(lease.lost$.pipe(toArray()));
    expect(lease.released).toBe(false);
    await lease.release();
    expect(lease.released).toBe(true);
    expect(await seen).toEqual([]);
    expect(await lastValueFrom(lease.lost$.pipe(toArray()))).toEqual([]);
  });

  it('a holder that lost its lease keeps its loss on lost$ after release(): its subscribers get the error, not an empty completion', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: memory, keyPrefix: '', ttl: 5000, renew: { interval: 20 } });
    const lease = await firstValueFrom(locker.acquire('k'));
    const lostEvent = firstValueFrom(locker.events$.pipe(filter((e) => e.type === 'lost')));
    await memory.release('k', lease.token); // the key is gone behind the holder's back
    await lostEvent;
    expect(await lease.release()).toBe(false);
    // the first look at lost$ comes after release(): it still tells of the loss
    expect((await lastValueFrom(lease.lost$.pipe(toArray()))).map((e) => e.reason)).toEqual(['expired']);
    expect(lease.held).toBe(false);
    expect((await lastValueFrom(lease.lost$.pipe(toArray()))).map((e) => e.reason)).toEqual(['expired']);
    await locker.close();
  });

  it('a lost holder is told once, and a holder released before a loss is not told of it', async () => {
    const memory = new MemoryLockStore();
    const locker = createLocker({ store: memory, keyPrefix: '', ttl: 5000, renew: { interval: 20 }, cohort: { maxMs: 60_000 } });
    const first = await firstValueFrom(locker.acquire('k'));
    const firstLost: unknown[] = [];
    first.lost$.subscribe((e) => firstLost.push(e));
    const second = firstValueFrom(locker.acquire('k'));
    await first.release();
    const successor = await second;
    const successorLost: unknown[] = [];
    successor.lost$.subscribe((e) => successorLost.push(e));
    await memory.release('k', successor.token);
    await lastValueFrom(successor.lost$.pipe(toArray()));
    expect(successorLost).toHaveLength(1);
    expect(firstLost).toEqual([]);
    expect(await lastValueFrom(first.lost$.pipe(toArray()))).toEqual([]);
    await locker.close();
  });

  it("a holder whose lease was lost releases only its own: the locker's next holder of the key keeps the lock", async () => {
    const memory = new MemoryLockStore();
    const store = new RecordingStore(memory);
    const locker = createLocker({ store, keyPrefix: '', ttl: 5000, renew: { interval: 20 }, cohort: { maxMs: 60_000 } });
    const first = await firstValueFrom(locker.acquire('k'));
    const waiting = firstValueFrom(locker.acquire('k')); // in the same gate, behind the holder
    await memory.release('k', first.token); // the key is gone behind the holder's back
    await firstValueFrom(first.lost$);
    const next = await waiting; // the gate moved on to its next waiter: a new store lease
    expect(next.token).not.toBe(first.token);
    expect(await first.release()).toBe(false);
    await new Promise((r) => setTimeout(r, 5));
    expect(next.held).toBe(true);
    // the key is still the new holder's in the store, and it is not passed or given back
    expect(await memory.extend('k', next.token, 5000)).toBe('extended');
    const third = firstValueFrom(locker.acquire('k', { waitTimeout: 0 })).catch((e: unknown) => e);
    expect(await third).toMatchObject({ name: 'LockTimeoutError' });
    expect(await next.release()).toBe(true);
    await locker.close();
  });

  it('withLock on a lease that came back from a pass still works (of() completes, lease given back once)', async () => {
    const { store, locker } = setup();
    const results = await Promise.all([1, 2, 3].map((n) => lastValueFrom(locker.withLock('k')(of(n)))));
    expect(results).toEqual([1, 2, 3]);
    expect(store.count('release')).toBe(1);
  });
});

describe('KeyGate.won: what a grant hands on', () => {
  it('the release tells the store the grant as it answered it: its first fence, the fences holders were given, and a moment after the answer', async () => {
    const { store, locker } = recordingLocker();
    for (let i = 0; i < 3; i++) {
      const lease = await firstValueFrom(locker.acquire('won:grant'));
      await lease.release();
    }
    const acquires = store.calls.filter((c) => c.op === 'tryAcquire');
    const releases = store.calls.filter((c) => c.op === 'release');
    expect(releases).toHaveLength(3);
    releases.forEach((release, i) => {
      const asked = acquires[i]!;
      if (!asked.result?.acquired) throw new Error('refused');
      // 16 reserved (room for late local arrivals), 1 given: the store is told 1
      expect(asked.result.fences ?? asked.fences).toBe(16);
      expect(release.grant).toEqual({ fence: asked.result.fence, fences: 1, answeredAt: expect.any(Number) });
      expect(release.grant!.answeredAt, 'after the call was sent').toBeGreaterThanOrEqual(asked.at);
      expect(release.grant!.answeredAt, 'before the release was sent').toBeLessThanOrEqual(release.at);
    });
    await locker.close();
  });

  it('a grant passed on locally tells the store, at its release, every fence its holders were given and no more', async () => {
    const { store, locker } = recordingLocker();
    // three holders of one turn: the grant's and two local passes
    const fences: number[] = [];
    const leases = [1, 2, 3].map(() => firstValueFrom(locker.acquire('won:passes')));
    for (const next of leases) {
      const lease = await next;
      fences.push(lease.fence);
      await lease.release();
    }
    const [acquire] = store.calls.filter((c) => c.op === 'tryAcquire');
    const releases = store.calls.filter((c) => c.op === 'release');
    expect(releases).toHaveLength(1);
    if (!acquire?.result?.acquired) throw new Error('refused');
    expect(acquire.result.fences ?? acquire.fences).toBeGreaterThan(3);
    const first = acquire.result.fence;
    expect(fences).toEqual([0, 1, 2].map((i) => first + i));
    expect(releases[0]!.grant).toMatchObject({ fence: first, fences: 3 });
    await locker.close();
  });

  it('a lease too short to have any validity (ttl 2 ms, no renewal) is granted and lost at once, as asked for — not given back and retried until the wait ends', async () => {
    const { store, locker } = recordingLocker();
    const lease = await firstValueFrom(locker.acquire('won:short', { ttl: 2, renew: false, waitTimeout: 1000 }));
    expect(store.count('tryAcquire')).toBe(1);
    expect(lease.held).toBe(false);
    const lost = await firstValueFrom(lease.lost$);
    expect(lost.reason).toBe('expired');
    await lease.release();
    await locker.close();
  });
});

describe("KeyGate.won: a grant for a session that is not the gate's current one", () => {
  it('is ignored: no holder, no store call, the gate stays as it was (idle, or acquiring with its own session)', async () => {
    const { store, locker } = recordingLocker();
    type Gate = { stateName: string; won(session: object, grant: object): void };
    const lineFor = (locker as unknown as { lineFor(key: string, storeKey: string): Gate }).lineFor.bind(locker);
    const grant = { fence: 1, fences: 1, sentAt: performance.now(), ttl: 30_000, waiting: 0 };
    // idle: nobody asked
    const idle = lineFor('won:stale', 'won:stale');
    expect(idle.stateName).toBe('idle');
    idle.won({}, grant);
    expect(idle.stateName).toBe('idle');
    // acquiring for someone else's session: a stranger's grant changes nothing
    const held = store.inner.tryAcquire('won:busy', 'another', 30_000);
    await held;
    const waiting = firstValueFrom(locker.acquire('won:busy', { waitTimeout: 200 })).catch((error: Error) => error);
    const busy = lineFor('won:busy', 'won:busy');
    expect(busy.stateName).toBe('acquiring');
    busy.won({}, grant);
    expect(busy.stateName).toBe('acquiring');
    expect(await waiting).toMatchObject({ name: 'LockTimeoutError' });
    expect(store.count('release')).toBe(0);
    await locker.close();
  });
});
