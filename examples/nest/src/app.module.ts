/**
 * The example application: LockModule wired from @nestjs/config (REDIS_URL, LOCK_WAIT_MS), a REST
 * route and an SSE route under @WithLock.
 */
import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { LockModule } from 'rxjs-lock/nestjs';
import { InventoryController } from './inventory.controller.js';
import { ReportsController } from './reports.controller.js';
import { StockService } from './stock.service.js';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    LockModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        redis: config.getOrThrow<string>('REDIS_URL'), // the module connects, and disconnects on shutdown
        locker: { waitTimeout: Number(config.get('LOCK_WAIT_MS') ?? 5_000) },
        errors: { busyStatus: 409 }, // the default, shown: busy after waitTimeout → 409 Conflict
      }),
      isGlobal: true,
    }),
  ],
  controllers: [InventoryController, ReportsController],
  providers: [StockService],
})
export class AppModule {}
