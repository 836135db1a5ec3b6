/**
 * How the store's Lua scripts are called, and in what order they run. A call by SHA that meets
 * NOSCRIPT (a new connection, a restarted server) is re-sent with its source once the NOSCRIPT
 * answer is back, so a call made after it whose script the server has runs first. Two ways:
 *
 * - {@link runRegistered}, the command registered with ioredis' `defineCommand`: its source on each
 *   connection's first write, also for a call written before a reconnect and re-sent after it, so
 *   a client's calls run in the order they were made across reconnects and restarts (only a server
 *   that loses its scripts under a live connection, SCRIPT FLUSH, answers NOSCRIPT). The quorum
 *   store calls its nodes this way: a give-back follows a grant that has not answered, on a node
 *   that may die and come back empty meanwhile.
 * - {@link runScript}, the single-node store's way: a plain `EVALSHA` on a connection where that
 *   script already ran, without the per-call wrapping of `defineCommand` (a custom command class, a
 *   reject hook and a WeakSet check per write, argument copies, an extra promise), which costs the
 *   uncontended pair measurable client CPU; the registered command on a connection's first call
 *   (and on a connection not ready yet, or a `Cluster`). A call by SHA re-sent after a reconnect to
 *   a server restarted empty meets NOSCRIPT and runs after calls made meanwhile; the engine never
 *   sends a key's next call for a token before the store answered (or gave up on) the last one
 *   (../../../engine/session/StoreSession.ts), so only different tokens' calls can swap: a grant
 *   refused that would have been taken a moment later, never a key left behind.
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

/** Per script: the connections (ioredis' socket of a `Redis` client) where a call of it succeeded. */
const LOADED_ON = Object.fromEntries(Object.keys(luaScripts).map((name) => [name, new WeakSet<object>()])) as unknown as Record<ScriptName, WeakSet<object>>;

/**
 * Runs script `name` on `client` (registered with {@link defineCommands}): by SHA on a connection
 * where it ran before, else as the registered command (its source on a connection's first call).
 */
export function runScript(client: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  // (ioredis writes a command of a ready client to its current socket at once)
  const socket = client.status === 'ready' ? client.stream : undefined;
  const { evalsha } = client;
  if (typeof socket !== 'object' || socket === null || typeof evalsha !== 'function' || typeof client.eval !== 'function') {
    return runRegistered(client, name, keys, args);
  }
  const loaded = LOADED_ON[name];
  if (!loaded.has(socket)) {
    return runRegistered(client, name, keys, args).then((reply) => {
      loaded.add(socket);
      return reply;
    });
  }
  const script = luaScripts[name];
  return evalsha.call(client, script.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
    if (!isNoScript(error)) throw error;
    // (the re-send loads the script again: the connection has it from then on)
    return client.eval!(script.source, keys.length, ...keys, ...args);
  });
}

/**
 * Runs script `name` on `client` as the command registered for it (ioredis' `defineCommand`): the
 * client's calls run in the order they were made, across reconnects and restarts (see above).
 */
export function runRegistered(client: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  const invoke = (client as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  return invoke.call(client, ...keys, ...args) as Promise<unknown>;
}

/** Redis's answer to an EVALSHA of a script it does not have. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Queues script `name` on `pipeline` (made by a client the scripts were registered on). */
export function queueScript(pipeline: RedisPipeline, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): void {
  const invoke = (pipeline as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  invoke.call(pipeline, ...keys, ...args);
}
