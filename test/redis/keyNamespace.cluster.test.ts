/**
 * Issue #10, helper keys, on a real 3-master Redis Cluster: a helper key lives in its lock key's
 * hash slot (a script may only touch one slot), and still no user key can name it. For base keys
 * with and without hash tags and every variant a user could try (the old helper suffixes and the
 * exact helper key names), the variant and the base taken in either order are two holders at once
 * with no CROSSSLOT (or any other) error, both release `true`, nothing is left on any node, and a
 * waiter in the Redis line of one is undisturbed by someone taking the other.
 */
import type { Cluster, Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Lease, Locker } from '../../src/index.js';
import { helperKey, lockKeys, RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';
import { EmbeddedRedisCluster } from '../../support/embeddedRedisCluster.js';
import { BASES, helperKeyVariants, LOCKER_PREFIXES, processOn, type Process } from '../support/keyNamespace.js';
import { liveKeysOf } from '../support/lockKeys.js';
import { keySlot } from '../support/keySlot.js';
import { eventually } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

let cluster: EmbeddedRedisCluster;
/** A cluster client for reading keys wherever they live. */
let reader: Cluster;
let nodes: Redis[];

expectNoUnhandledRejections();
beforeAll(async () => {
  cluster = await EmbeddedRedisCluster.start(3);
  reader = cluster.connect();
  nodes = cluster.nodeClients();
}, 60_000);
beforeEach(async () => {
  await Promise.all(nodes.map((node) => node.flushall()));
});
afterAll(async () => {
  reader?.disconnect();
  nodes?.forEach((node) => node.disconnect());
  await cluster?.stop();
});

/** Live keys on every node. */
async function liveKeys(): Promise<string[]> {
  return (await Promise.all(nodes.map(liveKeysOf))).flat();
}

const newProcess = (keyPrefix: string): Process => processOn(cluster.connect(), { keyPrefix, ttl: 20_000 });

const take = (locker: Locker, key: string) => firstValueFrom(locker.acquire(key, { waitTimeout: 0 }));

describe.each(LOCKER_PREFIXES)("helper keys on a Redis Cluster with keyPrefix '%s'", (prefix) => {
  let p1: Process;
  let p2: Process;
  let p3: Process;
  beforeAll(() => {
    p1 = newProcess(prefix);
    p2 = newProcess(prefix);
    p3 = newProcess(prefix);
  });
  afterAll(async () => {
    await Promise.all([p1, p2, p3].map((p) => p?.close()));
  });

  const pairs = BASES.flatMap((base) =>
    helperKeyVariants(base)
      .filter((variant) => !(prefix + variant).includes(RESERVED_PREFIX))
      .map((variant) => ({ base, variant })),
  );

  it("keeps every helper key of every key used here in its lock key's slot", () => {
    for (const { base, variant } of pairs) {
      for (const key of [base, variant]) expect(new Set(lockKeys(prefix + key).map(keySlot)).size, prefix + key).toBe(1);
    }
  });

  async function bothAtOnce(first: string, second: string): Promise<void> {
    const a = await take(p1.locker, first);
    const b = await take(p2.locker, second);
    expect(await reader.get(prefix + first)).toBe(a.token);
    expect(await reader.get(prefix + second)).toBe(b.token);
    expect(await Promise.all([a.release(), b.release()])).toEqual([true, true]);
    await eventually(async () => (await liveKeys()).length === 0, 2000);
  }

  async function waiterUndisturbed(held: string, other: string): Promise<void> {
    const holder = await take(p1.locker, held);
    let settled = false;
    const waiting = firstValueFrom(p3.locker.acquire(held, { waitTimeout: 15_000 })).finally(() => (settled = true));
    const line = helperKey(prefix + held, 'line');
    await eventually(async () => (await reader.zcard(line)) === 1, 5000);

    const intruder = await take(p2.locker, other);
    expect(await reader.get(prefix + other)).toBe(intruder.token);
    expect(await intruder.release()).toBe(true);
    expect(await reader.zcard(line)).toBe(1);
    expect(await reader.get(prefix + held)).toBe(holder.token);
    expect(settled).toBe(false);

    expect(await holder.release()).toBe(true);
    const next: Lease = await waiting;
    expect(await reader.get(prefix + held)).toBe(next.token);
    expect(await next.release()).toBe(true);
    await eventually(async () => (await liveKeys()).length === 0, 2000);
  }

  it.each(pairs)('$variant and $base: either order, two holders at once, no CROSSSLOT, nothing left', async ({ base, variant }) => {
    await bothAtOnce(variant, base);
    await bothAtOnce(base, variant);
  });

  it.each(pairs)('$variant and $base: a waiter in line for either is undisturbed by the other', async ({ base, variant }) => {
    await waiterUndisturbed(base, variant);
    await waiterUndisturbed(variant, base);
  });
});
