/**
 * A mutex waiter that holds from the 'granted' signal (src/engine/session/StoreSession.ts), on a
 * real Redis: a forged grant signal dated at — not after — the store clock its last "queued" answer
 * gave (the same millisecond: no way to tell which came first) makes the waiter ask the store, which
 * says it waits; it never holds while another process does. The permit waiter's twin is in
 * attackPermitLateSignal.test.ts. (Mutation testing, npm run mutation:session, found the `<=` of
 * that date check made `<` unprotected.)
 */
import { firstValueFrom } from 'rxjs';
import { expect, it } from 'vitest';
import type { Lease } from '../../src/index.js';
import type { AcquireResult } from '../../src/store/LockStore.js';
import { keysOf } from '../support/handoffHarness.js';
import { redisSuite } from '../support/redisSuite.js';
import { suiteLocker } from '../support/suiteLocker.js';
import { eventually, sleep } from '../support/timing.js';

const suite = redisSuite();

it('a forged grant dated at the store clock of the waiter’s last "queued" answer: the waiter asks the store and keeps waiting', async () => {
  const a = suiteLocker(suite, { ttl: 10_000 });
  const b = suiteLocker(suite, { ttl: 10_000 }, { placeTtl: 3_000 });
  // B's answers, as its store heard them
  const answers: AcquireResult[] = [];
  const inLine = b.store.tryAcquireInLine.bind(b.store);
  b.store.tryAcquireInLine = async (...args) => {
    const answer = await inLine(...args);
    answers.push(answer);
    return answer;
  };
  const held = await firstValueFrom(a.locker.acquire('forged'));
  let bLease: Lease | undefined;
  const bDone = firstValueFrom(b.locker.acquire('forged', { waitTimeout: 20_000 })).then((lease) => (bLease = lease));
  const { line } = keysOf('lock:forged');
  await eventually(async () => (await suite.admin.zcard(line)) === 1, 5_000, 2);
  const bToken = (await suite.admin.zrange(line, '0', '0'))[0]!;
  // B sleeps in line, listening, after an answered "queued" attempt sent with its channel live
  await eventually(() => answers.filter((r) => !r.acquired && r.queued === true).length >= 2, 5_000, 2);
  await sleep(50);
  const last = answers.at(-1)!;
  expect(last.acquired).toBe(false);
  const at = (last as { at?: number }).at;
  expect(typeof at).toBe('number');
  // B's store is the only one listening (A met no contention): its inbox is the one channel
  const channels = (await suite.admin.pubsub('CHANNELS', 'rxjs-lock:inbox:*')) as string[];
  expect(channels).toHaveLength(1);
  const inbox = channels[0]!;
  const asked = answers.length;
  expect(await suite.admin.publish(inbox, `granted ${bToken} 999999 0 1 ${at}`)).toBe(1);
  await eventually(() => answers.length > asked, 3_000, 2); // it asked the store…
  await sleep(50);
  expect(bLease).toBeUndefined(); // …which said it waits
  expect(held.held).toBe(true);
  expect(await held.release()).toBe(true);
  await bDone;
  expect(bLease!.fence).not.toBe(999999);
  expect(await bLease!.release()).toBe(true);
});
