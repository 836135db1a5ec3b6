/**
 * An ioredis client as the lock store sees it, counting the round trips the store makes: each call
 * of one of its registered scripts, and each transaction or pipeline (one write, one answer).
 * Redis's own statistics also count the commands a Lua script runs inside the server, so only this
 * count says how many round trips a lock costs. Everything goes to the real client.
 */
import type { Cluster, Redis } from 'ioredis';

export interface CountingClient<C> {
  /** The client to hand to the store (a proxy of the real one). */
  readonly client: C;
  /** Round trips made through it so far: `direct` + `batches`. */
  readonly roundTrips: number;
  /** Script calls sent on their own. */
  readonly direct: number;
  /** Transactions and pipelines sent. */
  readonly batches: number;
  /** Script calls sent inside pipelines. */
  readonly batched: number;
}

/** Script commands the store registers (used in pipelines) are named `rxjsLock_<script>_<sha>`. */
const isStoreScript = (name: string | symbol) => typeof name === 'string' && name.startsWith('rxjsLock_') && !name.endsWith('Buffer');

/**
 * The store calls a script on its own with `EVALSHA`, and again with `EVAL` (its source) after a
 * NOSCRIPT answer: each a round trip.
 */
const isScriptCall = (name: string | symbol) => name === 'evalsha' || name === 'eval' || isStoreScript(name);

export function countingClient<C extends Redis | Cluster>(redis: C): CountingClient<C> {
  const tally = { direct: 0, batches: 0, batched: 0 };
  const counted = (batch: object): object =>
    new Proxy(batch, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (property === 'exec') {
          return (...args: unknown[]) => {
            tally.batches++;
            return method.apply(target, args);
          };
        }
        return (...args: unknown[]) => {
          if (isStoreScript(property)) tally.batched++;
          const result = method.apply(target, args);
          // chained calls return the batch itself: keep counting through the proxy
          return result === target ? counted(target) : result;
        };
      },
    });
  const client = new Proxy(redis, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (isScriptCall(property)) {
        return (...args: unknown[]) => {
          tally.direct++;
          return method.apply(target, args);
        };
      }
      if (property === 'multi' || property === 'pipeline') return (...args: unknown[]) => counted(method.apply(target, args) as object);
      return method.bind(target);
    },
  });
  return {
    client,
    get roundTrips() {
      return tally.direct + tally.batches;
    },
    get direct() {
      return tally.direct;
    },
    get batches() {
      return tally.batches;
    },
    get batched() {
      return tally.batched;
    },
  };
}
