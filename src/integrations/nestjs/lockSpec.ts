/** What the lock decorators (`@WithLock`, `@WithPermit`, `@WithReadLock`, `@WithWriteLock`) record on a handler or class for `LockInterceptor` to read. */
import { identity, type MonoTypeOperatorFunction } from 'rxjs';
import type { ExecutionContext } from '@nestjs/common';
import type { Locker } from '../../engine/Locker.js';
import type { AcquireOptions } from '../../options/LockerOptions.js';
import type { OnDisconnect } from './clientDisconnect.js';
import type { LockErrorOptions } from './lockErrorResponses.js';
import type { KeyResolver, KeysResolver } from './lockKey.js';

/**
 * @internal What a handler locks: one key (a mutex; its key function may return a list, locked
 * as a set), a set of keys (all or none), permits of a semaphore, or a read or write lock.
 */
export type LockTarget =
  | { readonly kind: 'lock'; readonly key: KeysResolver }
  | { readonly kind: 'locks'; readonly keys: readonly KeysResolver[] }
  | { readonly kind: 'permit'; readonly key: KeyResolver; readonly limit: number; readonly permits: number | undefined }
  | { readonly kind: 'read' | 'write'; readonly key: KeyResolver };

/** @internal A handler's lock: what it locks, acquisition options, error answers and disconnect mode. */
export interface LockSpec {
  readonly target: LockTarget;
  readonly acquire: AcquireOptions;
  readonly errors: LockErrorOptions;
  readonly onDisconnect: OnDisconnect;
}

/**
 * @internal The operator that runs a handler's stream under its lock, keys computed from the
 * request (a template value it lacks throws `MissingKeyValueError` here).
 */
export function lockOperator<T>(spec: LockSpec, locker: Locker, context: ExecutionContext): MonoTypeOperatorFunction<T> {
  const { target, acquire } = spec;
  switch (target.kind) {
    case 'lock': {
      const key = target.key(context);
      // (anything else than a list goes to withLock, which names what is wrong with it)
      return Array.isArray(key) ? lockAll(locker, key, acquire) : locker.withLock(key as string, acquire);
    }
    case 'locks':
      return lockAll(
        locker,
        target.keys.flatMap((key) => key(context)),
        acquire,
      );
    case 'permit':
      return locker.withPermit(target.key(context), { ...acquire, limit: target.limit, ...(target.permits === undefined ? {} : { permits: target.permits }) });
    case 'read':
      return locker.withReadLock(target.key(context), acquire);
    case 'write':
      return locker.withWriteLock(target.key(context), acquire);
  }
}

/**
 * Every key of `keys` at once (`withLocks`: all or none, one global order); none for an empty list,
 * which a key function returns when the request names nothing to protect.
 */
function lockAll<T>(locker: Locker, keys: readonly string[], acquire: AcquireOptions): MonoTypeOperatorFunction<T> {
  return keys.length === 0 ? identity : locker.withLocks(keys, acquire);
}
