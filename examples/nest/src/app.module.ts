/**
 * The example application: LockModule wired from @nestjs/config (REDIS_URL, LOCK_WAIT_MS), a REST
 * route and an SSE route under @WithLock, and a scheduled job under @Locked.
 */
import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { ScheduleModule } from '@nestjs/schedule';
import { LockModule } from 'rxjs-lock/nestjs';
import { InventoryController } from './inventory.controller.js';
import { ReportsController } from './reports.controller.js';
import { SnapshotJob } from './snapshot.job.js';
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
    ScheduleModule.forRoot(),
  ],
  controllers: [InventoryController, ReportsController],
  providers: [StockService, SnapshotJob],
})
export class AppModule {}
