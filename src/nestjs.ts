/**
 * `rxjs-lock/nestjs`: the NestJS integration — `LockModule`, `@WithLock` (one key or several),
 * `@WithPermit`, `@WithReadLock`, `@WithWriteLock`, `@InjectLocker()`.
 * Needs `@nestjs/common` and `@nestjs/core` (optional peer dependencies; `ioredis` for
 * `LockModule.forRoot({ redis })`, `@nestjs/microservices` for RPC errors). The other entry points
 * never load Nest.
 *
 * @module rxjs-lock/nestjs
 */
export * from './integrations/nestjs/index.js';
