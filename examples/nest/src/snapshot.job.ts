/**
 * A scheduled job that every instance of the service schedules: `@Locked` with `onBusy: 'skip'`
 * lets one of the instances whose timers fire together run it, and the others skip it (`@WithLock`
 * would do nothing here: Nest runs no interceptor around a scheduled method). An instance whose
 * timer fires after that run ended runs it again: a job that must run once per period also keeps
 * a record of the last period it ran for.
 */
import { Inject, Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Locked } from 'rxjs-lock/nestjs';
import { StockService } from './stock.service.js';

@Injectable()
export class SnapshotJob {
  constructor(@Inject(StockService) private readonly stock: StockService) {}

  /** Every minute, on one of the instances: the stock levels appended to the history. */
  @Cron(CronExpression.EVERY_MINUTE)
  @Locked('job:stock-snapshot', { onBusy: 'skip' })
  async snapshot(): Promise<void> {
    await this.stock.snapshot();
  }
}
