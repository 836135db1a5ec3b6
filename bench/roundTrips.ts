/**
 * Client-side round-trip counting for any library that talks through ioredis.
 *
 * ioredis calls `Redis.prototype.sendCommand(command, stream?)` once per command, including each
 * command of a pipeline or MULTI batch; for those (and only those) `stream` is the batch's
 * writer, an object marked `isPipeline: true` and created once per `exec()`. So: a command
 * without a batch writer is one round trip, a batch writer seen for the first time is one
 * round trip, and a command object seen before (re-sent from the offline queue) is not counted
 * again. Replies and messages the server pushes (pub/sub) never pass through `sendCommand`.
 *
 * Only connections whose `connectionName` is the counter's current tag are counted. A
 * connection made with `duplicate()` (a subscriber, say) keeps its parent's options and so its
 * tag; the parent's admin connection has none. An ioredis Cluster client passes the tag to its
 * node connections, and names the connections it opens for itself after it (see {@link carriesTag}).
 */
import { Redis } from 'ioredis';

const INSTALLED = Symbol.for('rxjs-lock-bench/round-trip-counter');

interface Patchable {
  sendCommand(this: Redis, command: object, stream?: unknown, ...rest: unknown[]): unknown;
  [INSTALLED]?: RoundTripCounter;
}

/**
 * Is a connection named `connectionName` one of the tagged client's? Named `tag`, or opened by an
 * ioredis Cluster whose node connections are named `tag`: ioredis names its subscriber, sharded
 * subscriber and slot refresher connections `ioredis-cluster(<what>):<tag>`.
 */
export function carriesTag(connectionName: string | null | undefined, tag: string): boolean {
  if (typeof connectionName !== 'string') return false;
  return connectionName === tag || (connectionName.startsWith('ioredis-cluster(') && connectionName.endsWith(`):${tag}`));
}

function isBatchWriter(stream: unknown): stream is object {
  return typeof stream === 'object' && stream !== null && (stream as { isPipeline?: unknown }).isPipeline === true;
}

export class RoundTripCounter {
  private tag: string | undefined;
  private seenCommands = new WeakSet<object>();
  private seenBatches = new WeakSet<object>();
  count = 0;

  /** Starts counting (from 0) the commands of connections named `tag`. */
  start(tag: string): void {
    this.tag = tag;
    this.count = 0;
    this.seenCommands = new WeakSet();
    this.seenBatches = new WeakSet();
  }

  /** Stops counting; returns the count. */
  stop(): number {
    this.tag = undefined;
    return this.count;
  }

  /** @internal called by the patched `sendCommand`. */
  observe(connection: Redis, command: object, stream: unknown): void {
    if (this.tag === undefined || !carriesTag(connection.options.connectionName, this.tag)) return;
    if (this.seenCommands.has(command)) return;
    this.seenCommands.add(command);
    if (isBatchWriter(stream)) {
      if (this.seenBatches.has(stream)) return;
      this.seenBatches.add(stream);
    }
    this.count++;
  }
}

/** Patches `Redis.prototype.sendCommand` once per process; returns the process's counter. */
export function installRoundTripCounter(): RoundTripCounter {
  const proto = Redis.prototype as unknown as Patchable;
  const existing = proto[INSTALLED];
  if (existing) return existing;
  const counter = new RoundTripCounter();
  const original = proto.sendCommand;
  proto.sendCommand = function (this: Redis, command: object, stream?: unknown, ...rest: unknown[]) {
    counter.observe(this, command, stream);
    return original.call(this, command, stream, ...rest);
  };
  proto[INSTALLED] = counter;
  return counter;
}

/**
 * Checks the counter against known traffic on a live server: 3 single commands, a 5-command
 * pipeline (1), a 3-command MULTI (1), an EVAL (1), SUBSCRIBE on a duplicate (1), a PUBLISH (1)
 * whose pushed message must not count, UNSUBSCRIBE (1), plus a command on an untagged
 * connection (0). Throws when the count is not 9.
 */
export async function checkRoundTripCounting(host: string, port: number): Promise<number> {
  const counter = installRoundTripCounter();
  const tag = `bench-self-check-${process.pid}`;
  const tagged = new Redis({ host, port, connectionName: tag });
  const subscriber = tagged.duplicate();
  const untagged = new Redis({ host, port });
  try {
    await Promise.all([tagged.ping(), subscriber.ping(), untagged.ping()]);
    counter.start(tag);
    await tagged.set('bench:rt:a', '1');
    await tagged.get('bench:rt:a');
    await tagged.del('bench:rt:a');
    await tagged.pipeline().set('bench:rt:b', '1').get('bench:rt:b').incr('bench:rt:c').del('bench:rt:b').del('bench:rt:c').exec();
    await tagged.multi().set('bench:rt:d', '1').get('bench:rt:d').del('bench:rt:d').exec();
    await tagged.eval('return 1', 0);
    const message = new Promise<void>((resolve) => subscriber.once('message', () => resolve()));
    await subscriber.subscribe('bench:rt:channel');
    await tagged.publish('bench:rt:channel', 'hello');
    await message;
    await subscriber.unsubscribe('bench:rt:channel');
    await untagged.get('bench:rt:a');
    const counted = counter.stop();
    const expected = 9;
    if (counted !== expected) throw new Error(`round-trip counter self-check: counted ${counted}, expected ${expected}`);
    return counted;
  } finally {
    counter.stop();
    tagged.disconnect();
    subscriber.disconnect();
    untagged.disconnect();
  }
}
