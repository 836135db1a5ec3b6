/** What `@WithLock` records on a handler or class for `LockInterceptor` to read. */
import type { AcquireOptions } from '../../options/LockerOptions.js';
import type { OnDisconnect } from './clientDisconnect.js';
import type { LockErrorOptions } from './lockErrorResponses.js';
import type { KeyResolver } from './lockKey.js';

/** @internal A handler's lock: its key, acquisition options, error answers and disconnect mode. */
export interface LockSpec {
  readonly key: KeyResolver;
  readonly acquire: AcquireOptions;
  readonly errors: LockErrorOptions;
  readonly onDisconnect: OnDisconnect;
}
