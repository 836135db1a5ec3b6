/**
 * The quorum store's fence floor (RedlockStore over 3 private Redis servers): once a grant taught
 * the store the nodes' clocks, an uncontended grant is one round (the winners start their blocks
 * at the floor and record them: no raise); the node script's floor rules; and fences that keep
 * strictly increasing when the nodes disagree on the floor (a record above it), when a node's
 * fences stand ahead (its clock, simulated by a long-lived fence record: a real server's clock
 * cannot be set here), across different quorums, and across a node restarted empty.
 */
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { defineCommands, queueScript, runScript } from '../../src/backends/redis/protocol/commands.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { FenceFloor, FLOOR_MARGIN_MS } from '../../src/backends/redis/quorum/FenceFloor.js';
import { decodeNodeAcquire } from '../../src/backends/redis/quorum/QuorumNode.js';
import { covers, MAX_LEAD } from '../../src/backends/redis/quorum/quorumFences.js';
import { RedlockStore } from '../../src/redis.js';
import { quorumNodes } from '../support/quorumNodes.js';
import { seedOf } from '../support/fenceBlocks.js';

const nodes = quorumNodes(3);
beforeEach(async () => {
  await nodes.flush();
});

let n = 0;
const fresh = (what: string) => `fence-floor:${what}:${++n}`;

/** A store on new clients of the nodes, and the clients. */
function storeAndClients(): { store: RedlockStore; clients: Redis[] } {
  const clients = nodes.clients();
  return { store: new RedlockStore(clients, { nodeTimeout: 1_000 }), clients };
}

/**
 * Once the calls the store sent are done: a PING on each of its connections is answered after them
 * (a release answers once a quorum answered; the last node's may still be on its way).
 */
async function settled(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((client) => client.ping()));
}

/** Scripts run on each node since the last reset (EVAL and EVALSHA calls). */
async function scriptCalls(): Promise<number[]> {
  return Promise.all(
    nodes.admins.map(async (admin) => {
      const info = await admin.info('commandstats');
      return [...info.matchAll(/cmdstat_(?:eval|evalsha):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    }),
  );
}

/** Acquires and releases `key` with a new token; returns the grant's fence. */
async function grant(store: RedlockStore, key: string): Promise<number> {
  const token = `t${++n}`;
  const result = await store.tryAcquire(key, token, 10_000);
  if (!result.acquired) throw new Error(`${key} refused`);
  expect(await store.release(key, token, { fence: result.fence, fences: result.fences ?? 1, answeredAt: performance.now() })).toBe(true);
  return result.fence;
}

const increasing = (fences: readonly number[]) => fences.every((fence, i) => i === 0 || fence > fences[i - 1]!);

describe('RedlockStore fence floor: one round', () => {
  it('once a grant taught the store the clocks, each uncontended grant is one round per node (acquire, release): no raise', async () => {
    // The floor stands FLOOR_MARGIN_MS above the clocks the store expects; on a machine loaded by
    // the other test files a node can read its clock later than that (its block then starts at
    // its clock, and the grant takes the raise: correct, and the case the other tests cover).
    // Here the floor stands 1 s higher, so that every node starts its block at it.
    const at = FenceFloor.prototype.at;
    const spy = vi.spyOn(FenceFloor.prototype, 'at').mockImplementation(function (this: FenceFloor, sentAt: number) {
      const floor = at.call(this, sentAt);
      return floor === 0 ? 0 : floor + 1_000 * 4_000;
    });
    onTestFinished(() => spy.mockRestore());
    const { store, clients } = storeAndClients();
    await nodes.connected();
    const key = fresh('one-round');
    const fences = [await grant(store, key)];
    await settled(clients);
    await Promise.all(nodes.admins.map((admin) => admin.config('RESETSTAT')));
    for (let i = 0; i < 10; i++) fences.push(await grant(store, key));
    // (a release answers once a quorum answered: the last node's may still be on its way)
    await settled(clients);
    expect(await scriptCalls()).toEqual([20, 20, 20]);
    expect(increasing(fences)).toBe(true);
  });

  it('the node script: a block at the floor above the clock is recorded; at the clock it is not; a floor more than 60 s ahead is not taken; our own key again is a block above any unrecorded one', async () => {
    const admin = nodes.admins[0]!;
    defineCommands(admin);
    // (the reply decoded as the store does, as [fence, fences, seed, ttl], or [0, holder's pttl])
    const acquire = async (key: string, token: string, fences: number, floor: number): Promise<number[]> => {
      const reply = await runScript(
        admin,
        'quorumAcquire',
        [key, helperKey(key, 'fence'), helperKey(key, 'refused'), helperKey(key, 'hint')],
        [token, 10_000, fences, floor],
      );
      const answer = decodeNodeAcquire(reply, 10_000, fences, floor);
      return answer.acquired ? [answer.fence, answer.fences, answer.seed, answer.ttl] : [0, answer.holderTtl!];
    };
    const seed = await seedOf(admin);

    const ahead = fresh('ahead');
    const floor = seed + 2_000 * 4_000;
    const [fence, count, at, ttl] = (await acquire(ahead, 't', 3, floor)) as [number, number, number, number];
    expect([fence, count, ttl]).toEqual([floor, 3, 10_000]);
    expect(at).toBeGreaterThanOrEqual(seed);
    expect(Number(await admin.get(helperKey(ahead, 'fence')))).toBe(floor + 2);
    expect(await admin.pttl(helperKey(ahead, 'fence'))).toBeGreaterThan(1_500);
    // the key is held: refused to another token, with its TTL
    expect(await acquire(ahead, 'other', 1, 0)).toEqual([0, expect.any(Number)]);

    const behind = fresh('behind');
    const [low, , lowSeed] = (await acquire(behind, 't', 1, seed - 4_000)) as [number, number, number];
    expect(low).toBe(lowSeed + 1);
    expect(await admin.exists(helperKey(behind, 'fence'))).toBe(0);

    const far = fresh('far');
    const [farFence, , farSeed] = (await acquire(far, 't', 1, seed + 90_000 * 4_000)) as [number, number, number];
    expect(farFence).toBe(farSeed + 1);
    expect(await admin.exists(helperKey(far, 'fence'))).toBe(0);

    // the bare-integer replies (a free key, all the fences asked for): the seed for a block at the
    // clock, minus the seed for one at the floor; more fences than a grant reserves: the table
    const raw = (key: string, fences: number, floor: number) =>
      runScript(admin, 'quorumAcquire', [key, helperKey(key, 'fence'), helperKey(key, 'refused'), helperKey(key, 'hint')], ['t', 10_000, fences, floor]);
    expect(await raw(fresh('raw-clock'), 1, 0)).toBeGreaterThan(seed);
    expect(await raw(fresh('raw-floor'), 2, (await seedOf(admin)) + 2_000 * 4_000)).toBeLessThan(-seed);
    expect(await raw(fresh('raw-table'), 2_000, 0)).toEqual([expect.any(Number), 1_024, expect.any(Number), 10_000]);

    // the same call again (its answer lost): its first block may be unrecorded, so the new one
    // starts at least MAX_BLOCK above the clock, and is recorded; the TTL is what the key has left
    // (the record lives as long as the block stands above the clock, ~2 ms here: read in the same
    // transaction, or a loaded machine reads it after it lapsed)
    const tx = admin.multi();
    queueScript(tx, 'quorumAcquire', [behind, helperKey(behind, 'fence'), helperKey(behind, 'refused'), helperKey(behind, 'hint')], ['t', 10_000, 1, 0]);
    tx.get(helperKey(behind, 'fence'));
    const [[, reply], [, recorded]] = (await tx.exec()) as [[null, unknown], [null, string | null]];
    const answer = decodeNodeAcquire(reply, 10_000, 1, 0);
    if (!answer.acquired) throw new Error('our own key again was refused');
    expect(answer.fence).toBeGreaterThan(answer.seed + 1_024);
    expect(Number(recorded)).toBe(answer.fence);
    expect(answer.ttl).toBeLessThanOrEqual(10_000);
  });
});

describe('RedlockStore fence floor: fences strictly increase', () => {
  it('when the nodes disagree on the floor (records above it on some), the raise covers the rest, across different quorums', async () => {
    const store = nodes.store();
    await nodes.connected();
    const key = fresh('disagree');
    const fences = [await grant(store, key)];
    // node 0 and node 1 hold records above the floor, 2 s and 1 s ahead (another client's grants
    // with its own floors, say); node 2 is down: the quorum is nodes 0 and 1, whose blocks differ
    const seed = await seedOf(nodes.admins[0]!);
    await nodes.admins[0]!.set(helperKey(key, 'fence'), String(seed + 2_000 * 4_000), 'PX', 3_000);
    await nodes.admins[1]!.set(helperKey(key, 'fence'), String(seed + 1_000 * 4_000), 'PX', 3_000);
    try {
      await nodes.kill(2);
      fences.push(await grant(store, key));
      expect(fences[1]).toBeGreaterThan(seed + 2_000 * 4_000);
      // node 1 took the raise: with node 0 down and node 2 back (empty), the quorum {1, 2} still
      // issues above the grant before
      await nodes.restart(2);
      await nodes.kill(0);
      fences.push(await grant(store, key));
      // and {0, 2}, node 0 restarted empty: node 2 recorded the last grant's block
      await nodes.restart(0);
      await nodes.kill(1);
      fences.push(await grant(store, key));
      await nodes.restart(1);
      for (let i = 0; i < 3; i++) fences.push(await grant(store, key));
      expect(increasing(fences)).toBe(true);
    } finally {
      await nodes.restart(0, 1, 2);
    }
  });

  it('a node whose fences stand 30 s ahead (its clock, simulated by a record): fences strictly increase whichever winners answer first, across a kill and an empty restart', async () => {
    const store = nodes.store();
    await nodes.connected();
    const key = fresh('ahead');
    const fences = [await grant(store, key)];
    const ahead = (await seedOf(nodes.admins[0]!)) + 30_000 * 4_000;
    await nodes.admins[0]!.set(helperKey(key, 'fence'), String(ahead), 'PX', 60_000);
    // (when node 0 is among the first two winners, its fences set the grant's and the other
    // winner is raised; else nodes 1 and 2 answer the floor)
    for (let i = 0; i < 5; i++) fences.push(await grant(store, key));
    try {
      // node 2 down: the quorum is {0, 1}, and the fences come from node 0's; node 1 is raised
      await nodes.kill(2);
      fences.push(await grant(store, key));
      expect(fences.at(-1)!).toBeGreaterThan(ahead);
      // node 2 restarted empty, node 0 down: node 1's raised record keeps them up
      await nodes.restart(2);
      await nodes.kill(0);
      fences.push(await grant(store, key));
      fences.push(await grant(store, key));
      expect(increasing(fences)).toBe(true);
    } finally {
      await nodes.restart(0, 2);
    }
  });

  it('a node restarted empty between two grants that took no raise', async () => {
    const store = nodes.store();
    await nodes.connected();
    const key = fresh('restart');
    const fences = [await grant(store, key), await grant(store, key)];
    for (const i of [0, 1, 2]) {
      await nodes.kill(i);
      fences.push(await grant(store, key));
      await nodes.restart(i);
      fences.push(await grant(store, key));
    }
    expect(increasing(fences)).toBe(true);
  });
});

describe('RedlockStore fence floor: the rules', () => {
  const block = { fence: 1_000, fences: 3, last: 1_002 };

  it('a winner covers the block when its own block reaches the last fence and was recorded, or started at its clock no lower than the first fence', () => {
    // recorded: started above the clock (the floor)
    expect(covers({ fence: 1_000, fences: 3, seed: 900 }, block)).toBe(true);
    // recorded, but short of the block's end
    expect(covers({ fence: 1_000, fences: 2, seed: 900 }, block)).toBe(false);
    // at its clock, from the block's first fence on
    expect(covers({ fence: 1_000, fences: 3, seed: 999 }, block)).toBe(true);
    // at its clock, below the first fence: a release saying 'passed' could come before its clock
    // passed the block, though its own block reaches the end
    expect(covers({ fence: 990, fences: 20, seed: 989 }, block)).toBe(false);
    // no seed known; or the block more than 60 s ahead of the node's clock (the raise refuses it)
    expect(covers({ fence: 1_000, fences: 3 }, block)).toBe(false);
    expect(covers({ fence: 1_000, fences: 3, seed: 1_002 - MAX_LEAD - 1 }, block)).toBe(false);
  });

  it('the floor: none until a quorum of nodes taught it; then the quorum-th lowest clock estimate, plus the margin', () => {
    const floor = new FenceFloor(3, 2);
    floor.learn(2, 50_000, 10);
    expect(floor.at(20)).toBe(0);
    floor.learn(0, 10_000, 0);
    // leads: node 0 10,000; node 2 50,000 - 40,000 = 10,000; at 1 ms: 10,000 + 4,000 × (1 + margin)
    expect(floor.at(1)).toBe(10_000 + 4_000 * (1 + FLOOR_MARGIN_MS));
    // a node far ahead is a minority: not the quorum-th lowest
    floor.learn(1, 10_000 + HOURS, 0);
    expect(floor.at(1)).toBe(10_000 + 4_000 * (1 + FLOOR_MARGIN_MS));
  });
});

const HOURS = 3_600_000 * 4_000;
