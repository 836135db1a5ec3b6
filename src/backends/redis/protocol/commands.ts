/**
 * How the store's Lua scripts are called. A single call ({@link runScript}) is a plain `EVALSHA`,
 * and after a NOSCRIPT answer (a restart, a failover, SCRIPT FLUSH) the same call again as `EVAL`
 * with the source, settled only by that re-send's answer: the fallback ioredis' `defineCommand`
 * offers, without its per-call wrapping (a custom command class, a reject hook and a WeakSet check
 * per write, argument copies, an extra promise), which cost the uncontended pair measurable client
 * CPU. Pipelines queue the scripts as commands registered once per client with `defineCommand`
 * (ioredis re-sends a pipeline's NOSCRIPT calls by their source); their names carry the script's
 * SHA, so two versions of this library can share one client. A client without `evalsha`/`eval`
 * (a minimal adapter) is called through the registered commands too.
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
 * Runs script `name` on `client` (registered with {@link defineCommands}): by SHA, and by its
 * source after a NOSCRIPT answer.
 */
export function runScript(client: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  const { evalsha } = client;
  if (typeof evalsha !== 'function' || typeof client.eval !== 'function') {
    const invoke = (client as unknown as Record<string, Invoke>)[COMMANDS[name]]!;
    return invoke.call(client, ...keys, ...args) as Promise<unknown>;
  }
  const script = luaScripts[name];
  return evalsha.call(client, script.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
    if (!isNoScript(error)) throw error;
    return client.eval!(script.source, keys.length, ...keys, ...args);
  });
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
