/**
 * The calls a process makes on one connection within one tick leave together, in few writes.
 *
 * ioredis writes each command to its socket as it is made, and Node sends each write at once: a
 * system call per command, on the client and (each waking it) on the server. Where many locks are
 * taken and given back at the same time — 64 loops of one process, each on its own key — those
 * writes were about half of the client's CPU per acquisition. Holding the socket's writes back
 * (`cork`) until the end of the tick (`process.nextTick`, after the promise callbacks that made
 * them) sends them together (`writev`); Redis then reads them in one go too. Nothing is reordered:
 * the socket keeps every write in the order it was made, whoever made it, and a tick always ends,
 * so nothing waits longer than the code that runs in it — except when the process exits within the
 * tick (`process.exit`, an uncaught exception): no tick ends then, and the writes still held are
 * let go in the process' 'exit' event, so that what was sent before the exit reaches Redis as it
 * did without holding (a release made on the way out; the socket writes what it can at once).
 *
 * Only a connection whose socket can be corked (an ioredis `Redis`: `client.stream`, a Node
 * `net.Socket` or `tls.TLSSocket`) is held back. A Cluster client routes each command to a node's
 * connection of its own: the store passes that connection (./clusterConnection.ts).
 */
import type { RedisClient } from '../RedisClient.js';

/** A socket that can hold its writes back (Node's `stream.Writable`). */
interface CorkableStream {
  cork(): void;
  uncork(): void;
}

/**
 * The sockets written on in the current tick, with how many calls they hold back now: 0 after the
 * tick's first call (which left at once), then 1 to {@link CHUNK} once later calls are held.
 */
const thisTick = new WeakMap<object, number>();

/**
 * At most this many calls are held back together: the next call lets them go and holds again. A
 * whole burst held to the tick's end made client and server take turns (Redis idle while the
 * process ran the burst's code, the process idle while Redis ran the burst): in many-keys (64
 * loops) the throughput fell back to where it was without holding, on a quiet machine. In chunks
 * of 16, Redis starts on the first while the process makes the next: 55–65k pairs/s against 25–32k
 * held whole (and 14–27k not held), at about the same CPU per pair (bench/diagnostics/manyKeys.ts).
 */
const CHUNK = 16;

/**
 * The sockets held back now (until the end of the tick): let go at the process' exit if the tick
 * does not end first. Without this, a process that gave locks back and exited in the same tick
 * (`lease.release()` or `locker.close()`, then `process.exit()`) sent only the first of those
 * calls, and the other locks stayed held until their TTL (attackTickWrites.test.ts).
 */
const heldNow = new Set<CorkableStream>();

/** Whether the 'exit' listener that lets `heldNow` go is registered (once, at the first hold). */
let exitListened = false;

/**
 * Called before each call on `client`: the first call of a tick leaves at once (a lone call waits
 * for nothing); from the second on, the writes on `client`'s connection are held back until the
 * end of the tick and leave together, 16 calls at most at a time ({@link CHUNK}), if the connection
 * can be held (see above). Never throws.
 *
 * @example
 * ```ts
 * holdWritesForTick(redis);
 * const a = redis.get('a'); // written at once
 * holdWritesForTick(redis);
 * const b = redis.get('b'); // held
 * holdWritesForTick(redis);
 * const c = redis.get('c'); // held: b and c leave together once this tick's code has run
 * // (or when a 17th call is held: at most 16 leave together)
 * ```
 */
export function holdWritesForTick(client: RedisClient): void {
  const stream = (client as { readonly stream?: unknown }).stream;
  if (typeof stream !== 'object' || stream === null) return;
  const held = thisTick.get(stream);
  if (held !== undefined && held > 0) {
    if (held < CHUNK) thisTick.set(stream, held + 1);
    else {
      // (the chunk leaves; the socket is held again for the calls after it)
      thisTick.set(stream, 1);
      try {
        (stream as CorkableStream).uncork();
        (stream as CorkableStream).cork();
      } catch {
        // a socket that fails here fails its commands too: ioredis reports it on them
      }
    }
    return;
  }
  if (held === undefined) {
    thisTick.set(stream, 0);
    process.nextTick(endOfTick, stream as CorkableStream);
    return;
  }
  const { cork, uncork } = stream as Partial<CorkableStream>;
  if (typeof cork !== 'function' || typeof uncork !== 'function') return;
  try {
    cork.call(stream);
  } catch {
    return; // not held: the writes go out one by one, as without this
  }
  thisTick.set(stream, 1);
  heldNow.add(stream as CorkableStream);
  if (!exitListened) {
    exitListened = true;
    process.on('exit', letAllGo);
  }
}

/** Lets the writes held on `stream` go (one `uncork` for the one `cork`). */
function endOfTick(stream: CorkableStream): void {
  const held = thisTick.get(stream);
  thisTick.delete(stream);
  if (held === undefined || held === 0) return;
  heldNow.delete(stream);
  uncork(stream);
}

/** At the process' exit: lets go the writes held on every socket whose tick did not end. */
function letAllGo(): void {
  for (const stream of heldNow) {
    thisTick.delete(stream);
    uncork(stream);
  }
  heldNow.clear();
}

function uncork(stream: CorkableStream): void {
  try {
    stream.uncork();
  } catch {
    // a socket that fails here fails its commands too: ioredis reports it on them
  }
}
