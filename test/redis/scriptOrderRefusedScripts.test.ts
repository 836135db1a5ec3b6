import { describe, expect, it } from 'vitest';
import { defineCommands, runScript } from '../../src/backends/redis/protocol/commands.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { RedlockStore } from '../../src/redis.js';
import { drained, whileBusy } from '../support/busyServer.js';
import { quorumNodes } from '../support/quorumNodes.js';

const nodes = quorumNodes(3);

let n = 0;
const fresh = (what: string) => `script-order-refused:${what}:${++n}`;

describe('script order after two scripts were refused before they ran (BUSY)', () => {
  it('the grant refused first still goes with its source after the release was refused too: no key left on the node', async () => {
    // (node 0 as just restarted: no script loaded)
    await nodes.admins[0]!.script('FLUSH');
    const clients = nodes.clients();
    const store = new RedlockStore(clients, { nodeTimeout: 1_000 });
    await nodes.connected();
    // The store's first grant and first release on node 0 are both refused BUSY (nodes 1 and 2
    // answer them).
    const warm = fresh('warm');
    await whileBusy(nodes, 0, async () => {
      expect((await store.tryAcquire(warm, 'w', 30_000)).acquired).toBe(true);
      expect(await store.release(warm, 'w')).toBe(true);
      await drained(clients[0]!).catch(() => undefined);
    });
    expect(await nodes.admins[0]!.exists(warm)).toBe(0);

    const key = fresh('busy');
    nodes.servers[0]!.pause();
    try {
      // node 0 has the grant unanswered; the release is written behind it
      expect((await store.tryAcquire(key, 'a', 30_000)).acquired).toBe(true);
      expect(await store.release(key, 'a')).toBe(true);
    } finally {
      nodes.servers[0]!.resume();
    }
    await drained(clients[0]!);
    expect(await nodes.admins[0]!.get(key)).toBeNull();
    store.close();
  });

  it("after a refusal, the script's next call goes with its source and answers the script's reply; the calls after it go by SHA again", async () => {
    const [client] = nodes.clients();
    const admin = nodes.admins[0]!;
    defineCommands(client!);
    await nodes.connected();
    const acquire = (key: string) =>
      runScript(client!, 'quorumAcquire', [key, helperKey(key, 'fence'), helperKey(key, 'refused'), helperKey(key, 'hint')], ['t', 10_000, 1, 0]);
    /** EVAL and EVALSHA calls on node 0 since the last RESETSTAT. */
    const calls = async (): Promise<{ eval: number; evalsha: number }> => {
      const info = await admin.info('commandstats');
      const of = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return { eval: of('eval'), evalsha: of('evalsha') };
    };
    await admin.script('FLUSH');
    // the client's first call of the script is refused before it ran
    await whileBusy(nodes, 0, () => expect(acquire(fresh('refused'))).rejects.toThrow(/BUSY/));
    await admin.config('RESETSTAT');
    const key = fresh('after');
    const reply = await acquire(key);
    // a bare seed: the key taken with a block at the node's clock
    expect(typeof reply).toBe('number');
    expect(reply).toBeGreaterThan(0);
    expect(await admin.get(key)).toBe('t');
    expect(await calls()).toEqual({ eval: 1, evalsha: 0 });
    expect(typeof (await acquire(fresh('again')))).toBe('number');
    expect(await calls()).toEqual({ eval: 1, evalsha: 1 });
  });
});
