/** The NestJS integration, re-exported by the `rxjs-lock/nestjs` entry point. */
export { LockModule } from './LockModule.js';
export type { LockModuleRootOptions, LockModuleAsyncOptions } from './lockModule.definition.js';
export type { LockModuleOptions, LockModuleExtras } from './LockModuleOptions.js';
export { LockInterceptor } from './LockInterceptor.js';
export { WithLock, type WithLockOptions } from './WithLock.js';
export { WithPermit, type WithPermitOptions } from './WithPermit.js';
export { WithReadLock, WithWriteLock, type WithReadWriteLockOptions } from './WithReadWriteLock.js';
export type { HandlerLockOptions } from './lockDecorator.js';
export { InjectLocker } from './InjectLocker.js';
export { Locked, type LockedKey, type LockedOptions, type LockedMethodDecorator, type SkippingMethodDecorator } from './Locked.js';
export { LOCKER } from './tokens.js';
export { escapeKeyPart, type LockKey, type LockKeys } from './lockKey.js';
export type { LockErrorOptions, LockErrorMapper, BusyStatus } from './lockErrorResponses.js';
export { CLIENT_CLOSED_REQUEST, type OnDisconnect } from './clientDisconnect.js';
