/**
 * The store's Lua scripts as commands of an ioredis client, registered once per client with
 * `defineCommand`: ioredis then calls them by SHA, sends the source (EVAL) as the first call on
 * each connection and again after a NOSCRIPT answer (a restart, a failover, SCRIPT FLUSH), and
 * offers them on pipelines. Command names carry the script's SHA, so two versions of this library
 * can share one client.
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

/** Runs script `name` on `client` (registered with {@link defineCommands}). */
export function runScript(client: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  const invoke = (client as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  return invoke.call(client, ...keys, ...args) as Promise<unknown>;
}

/** Queues script `name` on `pipeline` (made by a client the scripts were registered on). */
export function queueScript(pipeline: RedisPipeline, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): void {
  const invoke = (pipeline as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
  invoke.call(pipeline, ...keys, ...args);
}
