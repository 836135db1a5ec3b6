/**
 * A StoreLease driven against a model store through random orders of sends, answers and failures
 * (renewals and manual extends), on a clock the test moves (`performance.now` stubbed). The model
 * store runs a call when it is sent (the earliest it can: the shortest key life), in the order the
 * calls were sent, or never (a failed call may not have run); answers and failures are handled in
 * any order. Checks, after every step: a held lease's deadline never passes the key's expiry in the
 * store (and the key was never gone while the lease was valid); a held lease always has a timer
 * entry no later than its deadline; with a healthy store (every call runs and is answered within
 * a few ms) the lease is never lost.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LockStoreError, type LockLostError } from '../../src/errors/errors.js';
import type { DueKind, Scheduled } from '../../src/engine/lease/LeaseTimers.js';
import { StoreLease, type StoreLeaseOwner } from '../../src/engine/lease/StoreLease.js';
import type { ExtendOutcome } from '../../src/store/LockStore.js';

interface Call {
  readonly sentAt: number;
  readonly ttl: number;
  readonly manual: boolean;
  readonly ran: boolean;
  readonly outcome: ExtendOutcome;
  resolve?: (o: ExtendOutcome) => void;
  reject?: (e: unknown) => void;
}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

async function run(seed: number, healthy: boolean, steps = 400, flaky = false): Promise<string | undefined> {
  const random = rng(seed);
  let now = 1000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
  const ttl0 = 300;
  let expiry = now + ttl0; // the key's expiry in the store (-Infinity: gone)
  const pending: Call[] = [];
  let lastRenewalFailed = false;
  const log: string[] = [];
  let entry: { kind: DueKind; dueAt: number } | undefined;
  const send = (sentAt: number, ttl: number, manual: boolean): Call => {
    const ran = flaky ? manual || lastRenewalFailed || random() < 0.7 : healthy || random() < 0.6;
    if (!manual) lastRenewalFailed = !ran;
    let outcome: ExtendOutcome = 'extended';
    if (ran) {
      if (expiry > sentAt) expiry = sentAt + ttl;
      else {
        expiry = Number.NEGATIVE_INFINITY;
        outcome = 'gone';
      }
    }
    const call: Call = { sentAt, ttl, manual, ran, outcome };
    pending.push(call);
    log.push(`${now}: send ${manual ? 'manual' : 'renew'} ttl ${ttl} (ran ${ran})`);
    return call;
  };
  const owner: StoreLeaseOwner = {
    extendLease: (_lease, ttl) =>
      new Promise<ExtendOutcome>((resolve, reject) => {
        const call = send(now, ttl, true);
        call.resolve = resolve;
        call.reject = reject;
      }),
    schedule: (lease: StoreLease, kind: DueKind, dueAt: number) => {
      entry = { kind, dueAt };
      lease.timerEntry = { lease: lease as Scheduled, kind, dueAt, slack: 0 };
    },
    unschedule: (lease: StoreLease) => {
      entry = undefined;
      lease.timerEntry = undefined;
    },
    renewed: () => {},
    renewFailed: () => {},
    passesSettled: () => {},
  };
  const lease = new StoreLease(owner, 'k', 'k', 't', ttl0, now, ttl0, { interval: undefined });
  let lost: LockLostError | undefined;
  lease.onLost = (e) => {
    lost = e;
  };
  lease.start(now);
  const deliver = async (call: Call) => {
    pending.splice(pending.indexOf(call), 1);
    const fail = !call.ran || (!healthy && !flaky && random() < 0.3);
    log.push(`${now}: ${fail ? 'fail' : `answer ${call.outcome}`} ${call.manual ? 'manual' : 'renew'} sent ${call.sentAt}`);
    if (call.manual) {
      if (fail) call.reject!(new LockStoreError('k', 'extend', 'down'));
      else call.resolve!(call.outcome);
      await flush();
    } else if (fail) lease.renewFailed(new LockStoreError('k', 'extend', 'down'), call.sentAt);
    else lease.extended(call.outcome, call.sentAt, call.ttl);
  };
  const check = (): string | undefined => {
    if (lease.valid(now) && lease.validUntil >= expiry) return `valid until ${lease.validUntil} past the key's expiry ${expiry}`;
    if (lease.isHeld && (entry === undefined || entry.dueAt > lease.validUntil))
      return `held with entry ${JSON.stringify(entry)} (deadline ${lease.validUntil})`;
    if ((healthy || flaky) && lost !== undefined) return `lost (${lost.reason}) with a healthy store`;
    return undefined;
  };
  const maxDelay = 10;
  for (let i = 0; i < steps && lease.isHeld; i++) {
    const r = random();
    if (r < 0.15) {
      const ttl = [100, 300, 1000, 3000][Math.floor(random() * 4)]!;
      now += 0.5; // (performance.now() in Node never gives two calls the same moment)
      lease.extend(ttl).catch(() => {});
      await flush();
    } else if (r < 0.45 && pending.length > 0) {
      await deliver(pending[Math.floor(random() * pending.length)]!);
    } else {
      // the clock moves on: the timer fires, and (healthy) answers come within maxDelay
      const target = now + Math.floor(random() * 60);
      for (;;) {
        const forced = healthy || flaky ? pending.reduce<Call | undefined>((a, c) => (a === undefined || c.sentAt < a.sentAt ? c : a), undefined) : undefined;
        const forcedAt = forced === undefined ? Infinity : forced.sentAt + (forced.ran ? maxDelay : 15);
        const timerAt = entry === undefined ? Infinity : entry.dueAt;
        if (Math.min(forcedAt, timerAt) > target) break;
        if (forcedAt <= timerAt) {
          now = Math.max(now, forcedAt);
          await deliver(forced!);
        } else {
          now = Math.max(now, timerAt) + 0.25;
          const e = entry!;
          entry = undefined;
          lease.timerEntry = undefined;
          const renewals: Scheduled[] = [];
          lease.due(e.kind, now, renewals);
          if (renewals.length > 0) {
            const ttl = lease.renewTtl;
            lease.renewing(now);
            send(now, ttl, false);
          }
        }
        const problem = check();
        if (problem !== undefined) return `${problem}\n${log.slice(-14).join('\n')}`;
      }
      now = Math.max(now, target);
    }
    const problem = check();
    if (problem !== undefined) return `${problem}\n${log.slice(-14).join('\n')}`;
  }
  return undefined;
}

afterEach(() => vi.restoreAllMocks());

describe('StoreLease against a model store, answers in random orders', () => {
  it('healthy store: never lost; always a timer entry; deadline within the key', async () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const problem = await run(seed, true);
      expect(problem, `seed ${seed}`).toBeUndefined();
    }
  });

  it('flaky link (renewals fail unrun, each failure handled within 15 ms; the rest answered within 10 ms): never lost', async () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const problem = await run(seed, false, 400, true);
      expect(problem, `seed ${seed}`).toBeUndefined();
    }
  });

  it('failing store: deadline within the key; always a timer entry', async () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const problem = await run(seed, false);
      expect(problem, `seed ${seed}`).toBeUndefined();
    }
  });
});
