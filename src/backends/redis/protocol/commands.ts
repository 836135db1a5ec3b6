/**
 * How the store's Lua scripts are called, and in what order they run. Every call goes as the
 * command registered for its script with ioredis' `defineCommand`, which decides when it writes the
 * call: the source (EVAL) on a connection's first call of the script, the SHA (EVALSHA) after. So a
 * call re-sent on a new connection after a reconnect (ioredis re-sends what was unanswered) carries
 * its source too, and a client's calls run on the server in the order they were made: across
 * reconnects, restarts without the scripts, and calls the client gave up on (ioredis'
 * `commandTimeout`), which may still run later but then in order with the give-back behind them.
 * The stores rely on that order: a quorum node's give-back follows a grant that has not answered;
 * a release and the next acquire of a key go back to back.
 *
 * A plain EVALSHA with an EVAL after NOSCRIPT would not keep it: the re-send goes out only once
 * the NOSCRIPT answer is back, and a call made meanwhile whose script the server has runs first
 * (a release overtaken by the next grant; a grant re-sent after a restart that sets the key after
 * its own give-back ran). Such a fast path measured no faster on the uncontended pair (×1.18 the
 * baseline either way, three alternating runs each).
 *
 * Two cases remain in which the server answers NOSCRIPT and ioredis re-sends the call after calls
 * made since: a server that loses its scripts under a live connection (SCRIPT FLUSH), and a first
 * call the server refused before running it (BUSY, OOM, READONLY), which ioredis still counts as
 * having brought the script. For the second, {@link runScript} sends the script's next calls with
 * their source until one succeeds.
 *
 * Pipelines queue the registered commands. Their names carry the script's SHA, so two versions of
 * this library can share one client.
 */
import type { RedisClient, RedisPipeline } from '../RedisClient.js';
import { luaScripts } from './lua/scripts.generated.js';

export type ScriptName = keyof typeof luaScripts;

const commandName = (name: ScriptName): string => `rxjsLock_${name}_${luaScripts[name].sha.slice(0, 12)}`;

/** The name each script is registered under. */
export const COMMANDS: Readonly<Record<ScriptName, string>> = Object.freeze(
  Object.fromEntries(Object.keys(luaScripts).map((name) => [name, commandName(name as ScriptName)])) as Record<ScriptName, string>,
);

type Invoke = (...keysAndArgs: Array<string | number>) => unknown;

/** Registers every script on `client` that is not registered yet. */
export function defineCommands(client: RedisClient): void {
  for (const name of Object.keys(luaScripts) as ScriptName[]) {
    const command = COMMANDS[name];
    if (typeof (client as unknown as Record<string, unknown>)[command] === 'function') continue;
    const script = luaScripts[name];
    client.defineCommand(command, { numberOfKeys: script.numberOfKeys, lua: script.source });
  }
}

/**
 * Per client: the scripts whose last call failed, maybe before the server ran it (see
 * {@link runScript}); their next calls go as plain EVAL until one succeeds.
 */
const REFUSED = new WeakMap<RedisClient, Set<ScriptName>>();

/**
 * Runs script `name` on `client` (registered with {@link defineCommands}) as the command
 * registered for it, so that the client's calls run on the server in the order they were made
 * (see above). After a call failed with an error other than one of the script's own (the server
 * refused it before running it: BUSY, OOM, READONLY, LOADING; or the connection failed), the script's next calls go
 * as plain `EVAL` with the source until one succeeds: ioredis counts a connection as having the
 * script once it wrote the source there, even when the server refused to run it.
 */
export function runScript(client: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  const refused = REFUSED.get(client);
  if (refused?.has(name) && typeof client.eval === 'function') {
    return client.eval(luaScripts[name].source, keys.length, ...keys, ...args).then((reply) => {
      refused.delete(name);
      return reply;
    });
  }
  const invoke = (client as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  return (invoke.call(client, ...keys, ...args) as Promise<unknown>).then(undefined, (error: unknown) => {
    if (!isOwnError(error)) {
      let names = REFUSED.get(client);
      if (names === undefined) REFUSED.set(client, (names = new Set()));
      names.add(name);
    }
    throw error;
  });
}

/** An error a script of this library answered itself (it ran: nothing to fear for its loading). */
function isOwnError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('rxjs-lock:');
}

/** Queues script `name` on `pipeline` (made by a client the scripts were registered on). */
export function queueScript(pipeline: RedisPipeline, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): void {
  const invoke = (pipeline as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  invoke.call(pipeline, ...keys, ...args);
}
