/**
 * Attack: key independence when the ioredis client has a `keyPrefix`.
 *
 * The store keeps its helper keys under `rxjs-lock:` and refuses lock keys that start with it —
 * but it checks the lock key *without* the client's prefix, and computes helper names that the
 * client then prefixes. So, on one Redis:
 *
 * 1. a client whose keyPrefix is `rxjs-lock:` can name (lock) another store's helper keys: the lock
 *    key `places:{k}` is the Redis key `rxjs-lock:places:{k}`, the places hash of the lock `k` of a
 *    client without a prefix; releasing `k` (nobody in line) DELetes it, and a second holder of
 *    `places:{k}` comes in while the first one still holds it;
 * 2. two applications that share a Redis with different ioredis prefixes (`app:` and none): the
 *    unprefixed one may lock `app:rxjs-lock:fence:{app:k}`, which is the prefixed one's fence
 *    counter of `k`; its acquire then fails inside the script after the SET (the bug issue #10
 *    fixed for unprefixed clients), orphaning `k` for its whole TTL.
 *
 * Each test asserts the promise (distinct user keys are independent locks, or the key is refused
 * at once with LockOptionsError), not the bug.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockOptionsError, type Lease, type Locker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { helperKey } from '../../src/backends/redis/protocol/keyLayout.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

/**
 * One "process": its own connection (with the given ioredis keyPrefix), store and locker (keyPrefix
 * ''); `undefined` when the store refuses the client at once (a refusal keeps the promise too).
 */
function newProcess(clientPrefix: string): Locker | undefined {
  const client = connect(suite.server, clientPrefix === '' ? {} : { keyPrefix: clientPrefix });
  suite.closers.push(() => client.disconnect());
  let store: RedisLockStore;
  try {
    store = new RedisLockStore(client);
  } catch (error) {
    if (isLockOptionsError(error)) return undefined;
    throw error;
  }
  const locker = createLocker({ store, keyPrefix: '', ttl: 20_000, waitTimeout: 300, retry: { minDelay: 5, jitter: 5 } });
  suite.closers.push(
    () => store.close(),
    () => locker.close(),
  );
  return locker;
}

/** acquire(key), or the LockOptionsError it throws at once (a refusal keeps the promise too). */
function acquireOrRefused(locker: Locker, key: string): Promise<Lease> | 'refused' {
  try {
    return firstValueFrom(locker.acquire(key));
  } catch (error) {
    if (isLockOptionsError(error)) return 'refused';
    throw error;
  }
}

describe('attack: ioredis client keyPrefix vs the reserved namespace', () => {
  it("a client keyPrefix 'rxjs-lock:' cannot make a lock key that another store deletes as its helper (no two holders of one key)", async () => {
    const holder1 = newProcess('rxjs-lock:');
    const holder2 = newProcess('rxjs-lock:');
    const other = newProcess('')!;
    if (holder1 === undefined || holder2 === undefined) return; // such a client is refused at once: the promise holds
    // The Redis key of `places:{k}` on the prefixed client is the places hash of `k` on the plain one.
    expect('rxjs-lock:' + 'places:{k}').toBe(helperKey('k', 'places'));

    const first = acquireOrRefused(holder1, 'places:{k}');
    if (first === 'refused') return; // refused at once: the promise holds
    const a = await first;
    expect(a.held).toBe(true);

    // Someone else takes and gives back the unrelated key `k` (nobody waits in its line).
    const k = await firstValueFrom(other.acquire('k'));
    expect(await k.release()).toBe(true);

    // A second holder of `places:{k}` must wait (and time out) while the first one holds it.
    const second = acquireOrRefused(holder2, 'places:{k}');
    if (second === 'refused') return;
    const outcome = await second.then(
      (lease) => ({ lease }),
      (error: unknown) => ({ error }),
    );
    const b = 'lease' in outcome ? outcome.lease : undefined;
    expect({ firstHeld: a.held, secondHeld: b?.held ?? false }).not.toEqual({ firstHeld: true, secondHeld: true });
    expect(b).toBeUndefined();
  });

  it("two clients with different prefixes on one Redis ('app:' and none): locking one user key never breaks another", async () => {
    const app = newProcess('app:')!;
    const plain = newProcess('')!;
    // The plain client's user key that is, in Redis, the prefixed client's fence counter of `k`.
    const victimFence = `app:${helperKey('k', 'fence', 'app:')}`;
    expect(victimFence).toBe('app:rxjs-lock:fence:{app:k}');

    const squat = acquireOrRefused(plain, victimFence);
    if (squat === 'refused') return; // refused at once: the promise holds
    const squatter = await squat;
    expect(squatter.held).toBe(true);

    // `k` on the prefixed client is free: it must be granted.
    const firstTry = await firstValueFrom(app.acquire('k')).then(
      (lease) => ({ lease, error: undefined }),
      (error: unknown) => ({ lease: undefined, error: String(error) }),
    );
    await firstTry.lease?.release();

    // And once the squatter is gone, `k` is free again at once (nothing orphaned by a failed script).
    await squatter.release();
    const secondTry = await firstValueFrom(app.acquire('k')).then(
      (lease) => ({ lease, error: undefined }),
      (error: unknown) => ({ lease: undefined, error: String(error) }),
    );
    await secondTry.lease?.release();
    expect({ whileSquatted: firstTry.error, afterSquatterLeft: secondTry.error }).toEqual({ whileSquatted: undefined, afterSquatterLeft: undefined });
  });
});
