/** What the lock decorators (`@WithLock`, `@WithPermit`, `@WithReadLock`, `@WithWriteLock`) record on a handler or class for `LockInterceptor` to read. */
import type { MonoTypeOperatorFunction } from 'rxjs';
import type { ExecutionContext } from '@nestjs/common';
import type { Locker } from '../../engine/Locker.js';
import type { AcquireOptions } from '../../options/LockerOptions.js';
import type { OnDisconnect } from './clientDisconnect.js';
import type { LockErrorOptions } from './lockErrorResponses.js';
import type { KeyResolver } from './lockKey.js';

/**
 * @internal What a handler locks: one key (a mutex), a set of keys (all or none), permits of a
 * semaphore, or a read or write lock.
 */
export type LockTarget =
  | { readonly kind: 'lock'; readonly key: KeyResolver }
  | { readonly kind: 'locks'; readonly keys: readonly KeyResolver[] }
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
    case 'lock':
      return locker.withLock(target.key(context), acquire);
    case 'locks':
      return locker.withLocks(
        target.keys.map((key) => key(context)),
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
