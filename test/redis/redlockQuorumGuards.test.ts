/**
 * Guards of the quorum store's acquire (RedlockStore.tryAcquire over 5 private Redis servers)
 * that mutation testing (npm run mutation:quorum) found no test for:
 * - the TTL a grant answers, and the validity counted from it, is the quorum-th LONGEST of the
 *   winners' keys (each capped at the TTL asked for): with exactly a quorum of winners, one of
 *   them holding our token from an earlier attempt with little left, the lock lasts only that
 *   long — not the TTL asked for;
 * - a refused attempt gives the key back on the nodes that granted it (a minority of winners),
 *   whether their grants were answered before the round was decided or not.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { connect } from '../support/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { sleep } from '../support/timing.js';

const nodes = quorumNodes(5);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `redlock-guards:${what}:${++n}`;

describe('RedlockStore: the validity of exactly a quorum of winners', () => {
  it('a quorum of winners, one of them with only what is left of an earlier key of ours: the lock lasts that long', async () => {
    const store = nodes.store();
    const key = fresh('quorum-ttl');
    // nodes 0 and 1: another holder (they refuse); node 2: an earlier attempt of ours whose release
    // did not reach it, 2 s left; nodes 3 and 4: free. Exactly 3 winners: a quorum.
    await Promise.all(nodes.admins.slice(0, 2).map((admin) => admin.set(key, 'other', 'PX', 30_000)));
    await nodes.admins[2]!.set(key, 'mine', 'PX', 2_000);
    const started = performance.now();
    const result = await store.tryAcquire(key, 'mine', 30_000);
    if (!result.acquired) throw new Error('refused');
    // the quorum (nodes 2, 3, 4) holds the key only as long as node 2 does: ≤ 2 s, not 30 s
    expect(result.ttl).toBeLessThanOrEqual(2_000);
    expect(result.ttl).toBeGreaterThan(1_000);
    expect(result.validity).toBeLessThanOrEqual(2_000 - (performance.now() - started) + 1);
    expect(await store.release(key, 'mine')).toBe(true);
  });
});

describe('RedlockStore: a refused attempt gives its key back', () => {
  it('2 winners of 5 (another token holds 3 nodes): not acquired, and nothing of ours is left on the 2', async () => {
    const store = nodes.store();
    const key = fresh('give-back');
    await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'other', 'PX', 30_000)));
    expect(await store.tryAcquire(key, 'mine', 30_000)).toMatchObject({ acquired: false });
    expect(await Promise.all(nodes.admins.map((admin) => admin.get(key)))).toEqual(['other', 'other', 'other', null, null]);
  });

  it('the 2 winners answered first (the refusing nodes slowed by a 200 ms script): their grants, known at the give-back, are given back', async () => {
    // (in the test above the round may be decided before the winners answer: the give-back then
    // goes to them as nodes that had not answered, and a give-back that skipped the nodes that
    // answered a grant would go unnoticed)
    const store = nodes.store();
    const key = fresh('give-back-answered');
    await Promise.all(nodes.admins.slice(0, 3).map((admin) => admin.set(key, 'other', 'PX', 30_000)));
    const blockers = nodes.servers.slice(0, 3).map((server) => connect(server));
    const slow = 'local s = redis.call("TIME") repeat local t = redis.call("TIME") until (t[1] - s[1]) * 1000000 + (t[2] - s[2]) > 200000 return 1';
    const busy = blockers.map((blocker) => blocker.eval(slow, 0));
    await sleep(20); // (the scripts reach the servers before the attempt does)
    try {
      expect(await store.tryAcquire(key, 'mine', 30_000)).toMatchObject({ acquired: false });
    } finally {
      await Promise.all(busy);
      for (const blocker of blockers) blocker.disconnect();
    }
    expect(await Promise.all(nodes.admins.map((admin) => admin.get(key)))).toEqual(['other', 'other', 'other', null, null]);
  });
});
