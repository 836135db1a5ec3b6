/**
 * The errors rxjs-lock reports. Each failure kind has its own class, because "someone else held
 * the lock for the whole wait" and "the store is broken" call for different reactions.
 *
 * Every error carries a brand (a `Symbol.for` key, shared by every copy of this module), so the
 * guards below work even when the ESM and the CommonJS builds are both loaded and `instanceof`
 * would say no.
 */

const BRAND = Symbol.for('rxjs-lock/error');

/**
 * Names of the errors rxjs-lock raises.
 *
 * @example
 * ```ts
 * const retryable: ReadonlySet<LockErrorName> = new Set(['LockTimeoutError', 'LockStoreError']);
 * work$.pipe(locker.withLock('report')).subscribe({
 *   error: (e) => (isLockError(e) && retryable.has(e.name) ? scheduleRetry() : log.error(e)),
 * });
 * ```
 */
export type LockErrorName =
  | 'LockTimeoutError'
  | 'LockStoreError'
  | 'ReplicaAckError'
  | 'LockLostError'
  | 'LockOptionsError'
  | 'LockerClosedError'
  | 'LockCapabilityError'
  | 'LockUpgradeError';

/**
 * Common base of every error raised by rxjs-lock.
 *
 * @example
 * ```ts
 * work$.pipe(locker.withLock('report')).subscribe({
 *   error: (e) => console.error(isLockError(e) ? `lock failure ${e.name}: ${e.message}` : e),
 * });
 * ```
 */
export abstract class LockError extends Error {
  /** Which error this is: test it, or use the guards (`isLockTimeoutError`, …), rather than `instanceof`. */
  abstract override readonly name: LockErrorName;
  /** @internal brand checked by {@link isLockError}. */
  readonly [BRAND] = true;
}

/**
 * What a store call was doing when it failed.
 *
 * @example
 * ```ts
 * const operation: StoreOperation = 'acquire';
 * work$.pipe(locker.withLock('report')).subscribe({
 *   error: (e) => isLockStoreError(e) && e.operation === operation && metrics.increment('lock.store_down_on_acquire'),
 * });
 * ```
 */
export type StoreOperation = 'acquire' | 'release' | 'extend' | 'leave' | 'inspect';

/**
 * The lock stayed held by someone else for the whole wait (`waitTimeout`).
 *
 * @example
 * ```ts
 * locker.acquire('report').pipe(
 *   catchError((e) => (isLockTimeoutError(e) ? of(null) : throwError(() => e))),
 * );
 * ```
 */
export class LockTimeoutError extends LockError {
  /** Always `'LockTimeoutError'`. */
  readonly name = 'LockTimeoutError' as const;
  constructor(
    /** The key that stayed held (without the locker's `keyPrefix`). */
    readonly key: string,
    /** How long this acquisition waited, in milliseconds. */
    readonly waitedMs: number,
    /**
     * How many times this acquisition found the lock held: store attempts made for it, and looks
     * at the local line when another acquisition of the same locker held the key (at least 1).
     */
    readonly attempts: number,
  ) {
    super(`Lock ${quote(key)} stayed held by another owner for ${Math.round(waitedMs)} ms (${attempts} attempt${attempts === 1 ? '' : 's'})`);
  }
}

/**
 * The store failed or did not answer within `commandTimeout`. The original failure is in
 * `cause`. Nothing is known about who holds the lock.
 *
 * @example
 * ```ts
 * locker.acquire('report').subscribe({
 *   error: (e) => isLockStoreError(e) && console.error(`store failed during ${e.operation}:`, e.cause),
 * });
 * ```
 */
export class LockStoreError extends LockError {
  /** `'LockStoreError'`, or the name of the more specific failure a subclass reports. */
  readonly name: 'LockStoreError' | 'ReplicaAckError' = 'LockStoreError';
  constructor(
    /** The key being worked on (without the locker's `keyPrefix`). */
    readonly key: string,
    /** The store call that failed. */
    readonly operation: StoreOperation,
    message: string,
    /** The underlying error, or a description of the timeout. */
    override readonly cause?: unknown,
  ) {
    super(`Lock store ${operation} of ${quote(key)} failed: ${bounded(message)}`, { cause });
  }
}

/**
 * A Redis store with `replicaAcks` granted the key, but fewer replicas than asked acknowledged the
 * grant within the timeout (Redis `WAIT`), so a failover could lose it: the store gave the key
 * back (if the server could still be reached; else it lapses with its TTL) and the acquisition
 * failed. `isLockStoreError` is true of it too. Like any store failure, it is not retried.
 *
 * @example
 * ```ts
 * locker.acquire('invoice:42').pipe(
 *   catchError((e) => {
 *     if (isReplicaAckError(e)) console.warn(`only ${e.acknowledged} of ${e.replicas} replicas within ${e.timeoutMs} ms`);
 *     return throwError(() => e);
 *   }),
 * );
 * ```
 */
export class ReplicaAckError extends LockStoreError {
  override readonly name = 'ReplicaAckError' as const;
  constructor(
    key: string,
    operation: StoreOperation,
    /** How many replicas acknowledged the grant (`WAIT`'s answer). */
    readonly acknowledged: number,
    /** How many were asked for (`replicaAcks.replicas`). */
    readonly replicas: number,
    /** How long the store waited for them, in ms (`replicaAcks.timeout`). */
    readonly timeoutMs: number,
    cause?: unknown,
  ) {
    super(
      key,
      operation,
      `${acknowledged} of ${replicas} replica${replicas === 1 ? '' : 's'} acknowledged the grant within ${timeoutMs} ms; it was given back`,
      cause,
    );
  }
}

/**
 * One node of a quorum store that failed a call, and why (in {@link QuorumUnreachableError.nodes}).
 * @example
 * ```ts
 * const failed: FailedNode = { node: '10.0.0.7:6379', reason: 'gave no answer within 100 ms (connection reconnecting)' };
 * ```
 */
export interface FailedNode {
  /** The node, as `host:port` (or the socket path). */
  readonly node: string;
  /** Why: no answer within the per-node timeout (with the connection's state), or the error's text. */
  readonly reason: string;
}

const QUORUM_BRAND = Symbol.for('rxjs-lock/quorum-unreachable');

/**
 * A quorum store (`RedlockStore`) could not reach enough of its nodes to decide: fewer than a
 * quorum (⌊N/2⌋+1) answered. Not the same as a busy lock: when a quorum answered and someone else
 * holds the key, the acquisition keeps waiting and ends with {@link LockTimeoutError}. `nodes`
 * names each node that failed and why. A locker hands it to the stream as the `cause` of its
 * {@link LockStoreError}.
 *
 * @example
 * ```ts
 * locker.acquire('report').pipe(
 *   catchError((e) => {
 *     const unreachable = isQuorumUnreachableError(e) ? e : isQuorumUnreachableError(e?.cause) ? e.cause : undefined;
 *     if (unreachable) console.error('down:', unreachable.nodes.map((n) => `${n.node} (${n.reason})`).join(', '));
 *     return throwError(() => e);
 *   }),
 * );
 * ```
 */
export class QuorumUnreachableError extends LockStoreError {
  /** @internal brand checked by {@link isQuorumUnreachableError}. */
  readonly [QUORUM_BRAND] = true;
  constructor(
    key: string,
    operation: StoreOperation,
    /** The nodes that failed the call, and why. */
    readonly nodes: readonly FailedNode[],
    /** How many nodes answered. */
    readonly answered: number,
    /** How many answers a decision needs (⌊N/2⌋+1). */
    readonly needed: number,
  ) {
    super(key, operation, 'quorum unreachable');
    // (its own message, not "Lock store … failed: …": the engine wraps it in a LockStoreError of
    // its own, whose message says that and quotes this one)
    this.message = bounded(
      `quorum unreachable for ${quote(key)} (${operation}): ${answered} of ${answered + nodes.length} nodes answered, ${needed} needed: ${nodes.map((n) => `${n.node} ${n.reason}`).join('; ')}`,
      2000,
    );
  }
}

/**
 * The error a store call's failure reaches the user as: the store's own {@link LockStoreError}
 * (a {@link ReplicaAckError}) about `key` as the user named it (the store's own in `cause`), or a `LockStoreError` wrapping
 * whatever else the store rejected with (in `cause`).
 */
export function storeFailure(key: string, operation: StoreOperation, error: unknown): LockStoreError {
  if (error instanceof ReplicaAckError || isLockError(error, 'ReplicaAckError')) {
    const e = error as ReplicaAckError;
    return new ReplicaAckError(key, operation, e.acknowledged, e.replicas, e.timeoutMs, error);
  }
  return new LockStoreError(key, operation, error instanceof Error ? error.message : String(error), error);
}

/**
 * Why a held lease stopped protecting its holder:
 * - `'expired'`: the key was gone (its TTL passed, or the store lost it), or the lease's deadline
 *   passed with no renewal tried (`renew: false`, or this process stalled);
 * - `'taken-over'`: another owner holds the key;
 * - `'store-unreachable'`: renewals failed or went unanswered until the lease's deadline;
 * - `'locker-closed'`: `locker.close()` gave the lock back while the work still ran.
 *
 * @example
 * ```ts
 * indexing$.pipe(locker.withLock('search:index')).subscribe({
 *   error: (e) => {
 *     if (!isLockLostError(e)) return;
 *     const reason: LockLostReason = e.reason;
 *     if (reason === 'store-unreachable') alertOps(`lock store unreachable, ${e.key} given up`);
 *   },
 * });
 * ```
 */
export type LockLostReason = 'expired' | 'taken-over' | 'store-unreachable' | 'locker-closed';

/**
 * A lease that was held is no longer protecting its holder: it expired, another owner took the
 * key, the store could not be reached to renew it before its deadline, or its locker was closed.
 *
 * @example
 * ```ts
 * longWork$.pipe(locker.withLock('import')).subscribe({
 *   error: (e) => isLockLostError(e) && console.error(`lost ${e.key} (${e.reason}): the work was stopped`),
 * });
 * ```
 */
export class LockLostError extends LockError {
  /** Always `'LockLostError'`. */
  readonly name = 'LockLostError' as const;
  constructor(
    /** The key whose lease was lost (without the locker's `keyPrefix`). */
    readonly key: string,
    /** The lost lease's token (`lease.token`). */
    readonly token: string,
    /** Why the lease stopped protecting its holder. */
    readonly reason: LockLostReason,
    /** The store failure behind a `'store-unreachable'` loss, when there was one. */
    override readonly cause?: unknown,
  ) {
    super(`Lock ${quote(key)} was lost (${reason})`, { cause });
  }
}

/**
 * The locker was closed (`locker.close()`): it takes no new acquisitions, and acquisitions that
 * were still waiting end with this error.
 *
 * @example
 * ```ts
 * await locker.close();
 * locker.acquire('report').subscribe({ error: (e) => console.log(isLockerClosedError(e)) }); // true
 * ```
 */
export class LockerClosedError extends LockError {
  /** Always `'LockerClosedError'`. */
  readonly name = 'LockerClosedError' as const;
  constructor(
    /** The key of the refused or abandoned acquisition (without the locker's `keyPrefix`). */
    readonly key: string,
  ) {
    super(`Lock ${quote(key)} was not acquired: the locker is closed`);
  }
}

/**
 * The locker's store lacks an optional capability that the call needs (`capability` names it,
 * see `src/store/capabilities.ts` and `src/store/SharedLockStore.ts`): `locker.inspect()` needs a
 * store with `inspect` (`InspectableStore`); semaphores and read-write locks (`withPermit`,
 * `withReadLock`, `withWriteLock`, …) need shared locks (`SharedLockStore`, `'shared'`). The
 * in-memory and Redis stores have both; the quorum store (`RedlockStore`) has neither: a quorum of
 * per-node semaphores does not bound the holders to the limit.
 *
 * @example
 * ```ts
 * locker.inspect('report').pipe(
 *   catchError((e) => (isLockCapabilityError(e) ? of(undefined) : throwError(() => e))),
 * );
 * ```
 */
export class LockCapabilityError extends LockError {
  /** Always `'LockCapabilityError'`. */
  readonly name = 'LockCapabilityError' as const;
  constructor(
    /** The key asked about (without the locker's `keyPrefix`). */
    readonly key: string,
    /** The missing capability: `'inspect'` (the store method), or `'shared'` (semaphores and read-write locks). */
    readonly capability: 'inspect' | 'shared',
  ) {
    super(
      capability === 'shared'
        ? `Lock ${quote(key)}: the locker's store has no shared locks (semaphores, read-write locks: tryAcquireShared() and its kin; the in-memory and Redis stores have them, a quorum store cannot bound holders to a limit)`
        : `Lock ${quote(key)}: the locker's store cannot ${capability} (it has no ${capability}() method; the in-memory and Redis stores have one)`,
    );
  }
}

/**
 * A reentrant write lock was asked for inside the work of a read lock of the same key (and
 * locker) that no enclosing write lock covers: a read lock cannot be upgraded. Waiting would never
 * end — the write waits for every reader, the enclosing one included, which waits for the work —
 * so the acquisition fails at once, and the enclosing read lock is left as it was. Take the write
 * lock first (a read inside a write joins it), or give the read lock back before writing. Raised
 * only with `reentrant: true`; without it such a write waits until its `waitTimeout`.
 *
 * @example
 * ```ts
 * // with createLocker({ reentrant: true })
 * readConfig().pipe(
 *   mergeMap((config) => (config.stale ? refresh(config).pipe(locker.withWriteLock('config')) : of(config))),
 *   locker.withReadLock('config'),
 * ).subscribe({ error: (e) => isLockUpgradeError(e) && console.error(`${e.key}: take the write lock first`) });
 * ```
 */
export class LockUpgradeError extends LockError {
  /** Always `'LockUpgradeError'`. */
  readonly name = 'LockUpgradeError' as const;
  constructor(
    /** The key of the refused write lock (without the locker's `keyPrefix`). */
    readonly key: string,
  ) {
    super(`Write lock ${quote(key)} was not acquired: the running code holds its read lock (a read lock cannot be upgraded; take the write lock first)`);
  }
}

/**
 * An option or argument is invalid. `option` names it, `allowed` says what is accepted and
 * `received` is what was passed. Raised synchronously, when the locker, Observable or operator is
 * created, so nothing is acquired.
 *
 * @example
 * ```ts
 * try {
 *   createLocker({ ttl: -1 });
 * } catch (e) {
 *   if (isLockOptionsError(e)) console.error(e.option, e.allowed, e.received); // ttl, an integer from 1 …, -1
 * }
 * ```
 */
export class LockOptionsError extends LockError {
  /** Always `'LockOptionsError'`. */
  readonly name = 'LockOptionsError' as const;
  constructor(
    /** The option or argument at fault, e.g. `ttl` or `key` (an unknown option's name is kept cut short). */
    option: string,
    /** What is accepted, e.g. `an integer from 1 to 2147483647 (ms)`. */
    readonly allowed: string,
    /** The rejected value (a string longer than 120 characters is kept cut short). */
    received: unknown,
  ) {
    super(`Invalid ${bounded(option)}: expected ${allowed}, received ${describe(received)}`);
    this.option = bounded(option);
    this.received = typeof received === 'string' ? bounded(received) : received;
  }

  /** The option or argument at fault, e.g. `ttl` or `key` (an unknown option's name is kept cut short). */
  readonly option: string;

  /** The rejected value (a string longer than 120 characters is kept cut short). */
  readonly received: unknown;
}

/** Longest piece of user input quoted in an error message, in characters. */
export const MAX_QUOTED_LENGTH = 120;

/**
 * `text` cut to {@link MAX_QUOTED_LENGTH} characters (never inside a surrogate pair), with the
 * full length said: a message about a 1 MB key must not carry the megabyte.
 */
function bounded(text: string, limit = MAX_QUOTED_LENGTH): string {
  if (text.length <= limit) return text;
  let end = limit;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/** A key or other user string as a message quotes it: JSON-escaped and bounded. */
function quote(text: string): string {
  return typeof text === 'string' ? JSON.stringify(bounded(text)) : String(text);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' || value == null) return String(value);
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

/** `value` if it is an Error, else an Error that says what was thrown (a store may reject with anything). */
export function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/**
 * Is `e` an error raised by rxjs-lock (any copy of it)? Optionally, of the given kind.
 *
 * @example
 * ```ts
 * if (isLockError(error, 'LockTimeoutError')) console.warn('busy'); // same as isLockTimeoutError(error)
 * else if (isLockError(error)) console.error('lock failure:', error.name);
 * ```
 */
export function isLockError(e: unknown, name?: LockErrorName): e is LockError {
  if (typeof e !== 'object' || e === null || (e as Record<symbol, unknown>)[BRAND] !== true) return false;
  return name === undefined || (e as LockError).name === name;
}

/**
 * Is `e` a {@link LockTimeoutError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * locker.acquire('invoice:42', { waitTimeout: 1_000 }).pipe(
 *   catchError((e) => (isLockTimeoutError(e) ? EMPTY : throwError(() => e))), // busy: skip this time
 * );
 * ```
 */
export const isLockTimeoutError = (e: unknown): e is LockTimeoutError => isLockError(e, 'LockTimeoutError');
/**
 * Is `e` a {@link LockStoreError} (a {@link ReplicaAckError} included)? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * work$.pipe(locker.withLock('k')).subscribe({
 *   error: (e) => isLockStoreError(e) && console.error(`the store failed (${e.operation})`, e.cause),
 * });
 * ```
 */
export const isLockStoreError = (e: unknown): e is LockStoreError => isLockError(e, 'LockStoreError') || isLockError(e, 'ReplicaAckError');
/**
 * Is `e` a {@link ReplicaAckError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * locker.acquire('payment:7').subscribe({
 *   error: (e) => isReplicaAckError(e) && console.warn(`${e.acknowledged} of ${e.replicas} replicas acknowledged`),
 * });
 * ```
 */
export const isReplicaAckError = (e: unknown): e is ReplicaAckError => isLockError(e, 'ReplicaAckError');
/**
 * Is `e` a {@link LockLostError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * work$.pipe(locker.withLock('k')).subscribe({
 *   error: (e) => isLockLostError(e) && console.error(`lost ${e.key} (${e.reason})`),
 * });
 * ```
 */
export const isLockLostError = (e: unknown): e is LockLostError => isLockError(e, 'LockLostError');
/**
 * Is `e` a {@link LockOptionsError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * try {
 *   createLocker({ waitTimeout: -5 });
 * } catch (e) {
 *   if (isLockOptionsError(e)) console.error(`${e.option}: expected ${e.allowed}`);
 * }
 * ```
 */
export const isLockOptionsError = (e: unknown): e is LockOptionsError => isLockError(e, 'LockOptionsError');
/**
 * Is `e` a {@link QuorumUnreachableError} (a {@link LockStoreError} too)? Works across ESM and
 * CommonJS copies. A locker's stream error carries it as its `cause`.
 * @example
 * ```ts
 * locker.acquire('k').subscribe({ error: (e) => isQuorumUnreachableError(e.cause) && alert(e.cause.nodes) });
 * ```
 */
export const isQuorumUnreachableError = (e: unknown): e is QuorumUnreachableError =>
  isLockStoreError(e) && (e as unknown as Record<symbol, unknown>)[QUORUM_BRAND] === true;

/**
 * Is `e` a {@link LockCapabilityError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * locker.inspect('k').pipe(
 *   catchError((e) => (isLockCapabilityError(e) ? of(null) : throwError(() => e))), // the store cannot inspect
 * );
 * ```
 */
export const isLockCapabilityError = (e: unknown): e is LockCapabilityError => isLockError(e, 'LockCapabilityError');
/**
 * Is `e` a {@link LockUpgradeError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * work$.pipe(locker.withWriteLock('config', { reentrant: true })).subscribe({
 *   error: (e) => isLockUpgradeError(e) && console.error('a read lock of config is held here: take the write lock first'),
 * });
 * ```
 */
export const isLockUpgradeError = (e: unknown): e is LockUpgradeError => isLockError(e, 'LockUpgradeError');
/**
 * Is `e` a {@link LockerClosedError}? Works across ESM and CommonJS copies.
 *
 * @example
 * ```ts
 * locker.acquire('k').subscribe({
 *   error: (e) => isLockerClosedError(e) && console.log('shutting down: not acquired'),
 * });
 * ```
 */
export const isLockerClosedError = (e: unknown): e is LockerClosedError => isLockError(e, 'LockerClosedError');
