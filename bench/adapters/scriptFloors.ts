/**
 * Two references of the one-server scenarios uncontended and many-keys (see ../libraries.ts): the
 * baseline's loop (./baseline.ts: try, the 10 ms sleep after a refusal, give up at the wait limit)
 * with acquire and release each one Lua script called with EVALSHA in the store's shape (the
 * four keys of a lock: the key, its fence counter, its line, its places; the same arguments).
 *
 * - `script-floor`: each script does only what the baseline does (SET NX PX; compare-and-delete).
 *   The least any lock pays whose acquire and release are one script call each.
 * - `fenced-floor`: each script does what the store's scripts must do on the path these scenarios
 *   take (nobody in line), no more: acquire checks that no line, no place and no fence record is
 *   beside the key (one EXISTS of three keys), takes it with SET NX PX and answers a fence seeded
 *   from the server's clock (TIME); release compares and, when no line is beside the key, deletes
 *   the key and its places (GET, EXISTS, DEL). The least a lock pays that fences from the clock
 *   and keeps a fair line, with one script per call: between it and script-floor lies what
 *   fencing and the line cost on the server; between store-only (./references.ts) and it, the
 *   store's client side (its keys, arguments and answers).
 */
import { createHash, randomUUID } from 'node:crypto';
import { evalScript, pollForLock } from './baseline.js';
import { adapterOf, type AdapterContext, type LockAdapter, type Limits } from './types.js';

// The shapes of the store's calls: acquire(lock, fence, line, places; token, ttl, fences) and
// release(lock, fence, line, places; token, 'passed'), with the baseline's work inside.
const ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');

// fenced-floor's: the store's scripts' path when nobody is in line (lock, fence, line, places).
// A release that finds a line (never, in the scenarios it runs in) deletes the key all the same.
const FENCED_ACQUIRE =
  "if redis.call('EXISTS', KEYS[3], KEYS[4], KEYS[2]) == 0 and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then local t = redis.call('TIME') return (t[1] - 1735689600) * 4000000 + t[2] * 4 + 1 end return 0";
const FENCED_RELEASE =
  "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end if redis.call('EXISTS', KEYS[3]) == 0 then redis.call('DEL', KEYS[1], KEYS[4]) else redis.call('DEL', KEYS[1]) end return 1";

/** One pair of scripts in the store's shape: `acquire` answers a non-zero integer when it took the key. */
interface ScriptPair {
  readonly acquire: string;
  readonly release: string;
}

function scriptLoop(pair: ScriptPair): (ctx: AdapterContext) => Promise<LockAdapter> {
  const acquireSha = sha(pair.acquire);
  const releaseSha = sha(pair.release);
  return async (ctx) => {
    const redis = await ctx.connect();
    const acquire = (name: string, limits: Limits) => {
      const token = randomUUID();
      const keys = [name, `rxjs-lock:fence:{${name}}`, `rxjs-lock:line:{${name}}`, `rxjs-lock:places:{${name}}`];
      return pollForLock(
        async () => {
          if ((await evalScript(redis, pair.acquire, acquireSha, keys, [token, limits.ttlMs, 1])) === 0) return null;
          return {
            release: () =>
              evalScript(redis, pair.release, releaseSha, keys, [token, 'passed']).then(
                () => undefined,
                () => undefined,
              ),
          };
        },
        name,
        limits,
      );
    };
    return adapterOf(acquire, async () => undefined);
  };
}

export const createScriptFloor = scriptLoop({ acquire: ACQUIRE, release: RELEASE });
export const createFencedFloor = scriptLoop({ acquire: FENCED_ACQUIRE, release: FENCED_RELEASE });
