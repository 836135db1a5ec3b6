/**
 * A Lua script called by SHA. The SHA1 is computed locally once; calls use EVALSHA, and when a
 * server answers NOSCRIPT (first use, restart, failover, SCRIPT FLUSH) the call is repeated as
 * EVAL, which runs the script and caches it on that server, so later calls go by SHA again.
 * EVAL rather than SCRIPT LOAD because it reaches the node that owns the keys in a Cluster.
 */
import { createHash } from 'node:crypto';
import type { RedisClient } from './RedisClient.js';

export class LuaScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly numberOfKeys: number,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** The script of one entry of the generated `luaScripts` table. */
  static of(entry: { readonly name: string; readonly numberOfKeys: number; readonly source: string }): LuaScript {
    return new LuaScript(entry.name, entry.numberOfKeys, entry.source);
  }

  /** Runs the script on `client` with `keys` (exactly `numberOfKeys` of them) and `args`. */
  async run(client: RedisClient, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, this.numberOfKeys, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.runSource(client, keys, args);
    }
  }

  /** Runs the script by its source (EVAL), which also caches it on the server. */
  runSource(client: RedisClient, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    return client.eval(this.source, this.numberOfKeys, ...keys, ...args);
  }
}

/** Did the server answer that it does not know the script's SHA? */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
