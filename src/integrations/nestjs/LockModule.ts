/**
 * `LockModule`: provides a `Locker` to a Nest application, and closes what it opened when the
 * application shuts down.
 */
import { Inject, Module, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import type { Locker } from '../../engine/Locker.js';
import { ConfigurableLockModule, LOCK_MODULE_OPTIONS } from './lockModule.definition.js';
import { openLockResources, type LockResources, type LockSettings } from './lockResources.js';
import type { LockModuleOptions } from './LockModuleOptions.js';
import { LOCK_RESOURCES, LOCK_SETTINGS, LOCKER } from './tokens.js';

const providers: Provider[] = [
  { provide: LOCK_RESOURCES, useFactory: (options: LockModuleOptions) => openLockResources(options), inject: [LOCK_MODULE_OPTIONS] },
  { provide: LOCKER, useFactory: (resources: LockResources): Locker => resources.locker, inject: [LOCK_RESOURCES] },
  { provide: LOCK_SETTINGS, useFactory: ({ locker, errors }: LockResources): LockSettings => ({ locker, errors }), inject: [LOCK_RESOURCES] },
];

/**
 * Provides the {@link rxjs-lock!Locker} (token {@link LOCKER}, `@InjectLocker()`) that `@WithLock` uses.
 * Configure it with `forRoot(options)` or `forRootAsync({ imports, inject, useFactory })`; pass
 * `isGlobal: true` to use it from every module. On application shutdown (`app.close()`, or a
 * signal with `app.enableShutdownHooks()`) it closes the locker — waiting acquisitions fail, held
 * locks are given back — then the store and the Redis connection it made itself, never a store or
 * client you passed.
 *
 * @example
 * ```ts
 * import { Module } from '@nestjs/common';
 * import { ConfigModule, ConfigService } from '@nestjs/config';
 * import { LockModule } from 'rxjs-lock/nestjs';
 *
 * @Module({
 *   imports: [
 *     ConfigModule.forRoot(),
 *     LockModule.forRootAsync({
 *       imports: [ConfigModule],
 *       inject: [ConfigService],
 *       useFactory: (config: ConfigService) => ({
 *         redis: config.getOrThrow<string>('REDIS_URL'),
 *         locker: { waitTimeout: 2_000 },
 *       }),
 *       isGlobal: true,
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
export class LockModule extends ConfigurableLockModule implements OnApplicationShutdown {
  constructor(private readonly resources: LockResources) {
    super();
  }

  /** Closes the locker, then what the module made (store, Redis connection). */
  async onApplicationShutdown(): Promise<void> {
    await this.resources.close();
  }
}

// Applied as calls rather than decorator syntax, so the library compiles without
// `experimentalDecorators` and does not depend on decorator metadata.
Module({ providers, exports: [LOCKER, LOCK_SETTINGS] })(LockModule);
Inject(LOCK_RESOURCES)(LockModule, undefined, 0);
