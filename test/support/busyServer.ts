/**
 * A Redis server made busy on purpose: another client's endless script, during which the server
 * refuses every other command with `BUSY` (the script-order tests: a call refused before it ran).
 */
import type { Redis } from 'ioredis';
import type { QuorumNodes } from './quorumNodes.js';
import { connect } from './redis.js';
import { eventually, sleep } from './timing.js';

/**
 * Runs `run` while server `index` of `nodes` is busy with another client's endless script (every
 * other command is refused `BUSY`), then kills that script.
 */
export async function whileBusy<T>(nodes: QuorumNodes, index: number, run: () => Promise<T>): Promise<T> {
  const admin = nodes.admins[index]!;
  await admin.config('SET', 'busy-reply-threshold', '10');
  const blocker = connect(nodes.servers[index]!, { maxRetriesPerRequest: 0 });
  const looping = blocker.eval('while true do end', 0).catch((error: unknown) => error);
  try {
    await eventually(() =>
      admin.ping().then(
        () => false,
        (error: Error) => error.message.startsWith('BUSY'),
      ),
    );
    return await run();
  } finally {
    await admin.script('KILL');
    await looping;
    blocker.disconnect();
    await admin.config('SET', 'busy-reply-threshold', '5000');
  }
}

/** Resolves once every call written to `client` before it was answered, re-sends included. */
export async function drained(client: Redis): Promise<void> {
  await client.ping();
  await client.ping();
  await sleep(50);
}
