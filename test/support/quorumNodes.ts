/**
 * The Redis masters of a quorum-store test: N private servers without persistence (a restart
 * comes back empty), started before the file's tests and stopped after them, with a client on each
 * (`connect`: fails fast while a server is down) and helpers to kill, restart, pause and resume
 * some of them. No unhandled rejection may happen while the file runs.
 */
import type { Redis, RedisOptions } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import { RedlockStore, type RedlockStoreOptions } from '../../src/redis.js';
import { EPHEMERAL } from './dataLossServers.js';
import { liveKeysOf } from './lockKeys.js';
import { RESERVED_PREFIX } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect, EmbeddedRedis } from './redis.js';
import { eventually } from './timing.js';
import { unhandledRejections } from './unhandled.js';

export interface QuorumNodes {
  /** The servers (from beforeAll on). */
  readonly servers: readonly EmbeddedRedis[];
  /** An admin client per server (from beforeAll on). */
  readonly admins: readonly Redis[];
  /** New clients, one per server, closed after the last test. */
  clients(options?: RedisOptions): Redis[];
  /** A store on new clients of every server (`nodeTimeout` 1,000 ms unless `options` say). */
  store(options?: RedlockStoreOptions): RedlockStore;
  /** FLUSHALL on every running server. */
  flush(): Promise<void>;
  /** How many lock keys a quorum of the nodes holds. */
  countKeys(): Promise<number>;
  /** Kills servers `indexes` (SIGKILL). */
  kill(...indexes: number[]): Promise<void>;
  /** Waits until every client of a running server answers. */
  connected(): Promise<void>;
  /** Starts those of servers `indexes` that were killed again (empty), and waits until the admin clients are ready. */
  restart(...indexes: number[]): Promise<void>;
  /** Pub/sub connections (subscribers, such as the stores' hint connections) on every server. */
  pubsubConnections(): Promise<number>;
}

/** The lock keys alive on a node (not the store's helper keys). */
async function liveLockKeysOf(node: Redis): Promise<string[]> {
  return (await liveKeysOf(node)).filter((key) => !key.startsWith(RESERVED_PREFIX));
}

export function quorumNodes(count: number): QuorumNodes {
  const rejections = unhandledRejections();
  const servers: EmbeddedRedis[] = [];
  const admins: Redis[] = [];
  const opened: Redis[] = [];
  const stores: RedlockStore[] = [];
  const down = new Set<number>();
  /** Which server each client talks to. */
  const serverOf = new Map<Redis, number>();

  beforeAll(async () => {
    rejections.start();
    servers.push(...(await Promise.all(Array.from({ length: count }, () => EmbeddedRedis.start({ args: EPHEMERAL })))));
    admins.push(...servers.map((server) => connect(server)));
    admins.forEach((admin, i) => serverOf.set(admin, i));
  });
  afterAll(async () => {
    rejections.stop();
    for (const store of stores) store.close();
    for (const client of [...opened, ...admins]) client.disconnect();
    await Promise.all(servers.map((server) => server.stop().catch(() => undefined)));
    expect(rejections.seen).toEqual([]);
  });

  const clients = (options?: RedisOptions): Redis[] => {
    const made = servers.map((server) => connect(server, options));
    made.forEach((client, i) => serverOf.set(client, i));
    opened.push(...made);
    return made;
  };

  return {
    servers,
    admins,
    clients,
    store(options) {
      // (a generous node timeout unless the test is about it: a loaded machine must not make a
      // live node look dead)
      const store = new RedlockStore(clients(), { nodeTimeout: 1_000, ...options });
      stores.push(store);
      return store;
    },
    async flush() {
      await Promise.all(admins.filter((_, i) => !down.has(i)).map((admin) => admin.flushall()));
    },
    async countKeys() {
      // A lock of a quorum store is a key held on a quorum: a release answers once a quorum of
      // nodes gave it up, and the others follow a moment later.
      const keys = await Promise.all(admins.filter((_, i) => !down.has(i)).map((admin) => liveLockKeysOf(admin)));
      const held = new Map<string, number>();
      for (const key of keys.flat()) held.set(key, (held.get(key) ?? 0) + 1);
      return [...held.values()].filter((nodesHolding) => nodesHolding >= Math.floor(count / 2) + 1).length;
    },
    async kill(...indexes) {
      for (const i of indexes) down.add(i);
      await Promise.all(indexes.map((i) => servers[i]!.kill()));
    },
    async restart(...indexes) {
      const dead = indexes.filter((i) => down.has(i));
      await Promise.all(dead.map((i) => servers[i]!.restart()));
      for (const i of dead) down.delete(i);
      await this.connected();
    },
    async pubsubConnections() {
      const lists = await Promise.all(admins.map((admin) => admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub').then(String)));
      return lists.reduce((sum, list) => sum + list.split('\n').filter((line) => line.includes('sub=')).length, 0);
    },
    async connected() {
      // (a command sent while a client still retries a connection made before the restart can
      // fail with the retry limit: ask again)
      const live = [...admins, ...opened].filter((client) => !down.has(serverOf.get(client)!));
      for (const client of live)
        await eventually(
          () =>
            client.ping().then(
              () => true,
              () => false,
            ),
          10_000,
          20,
        );
    },
  };
}
