/** REST: one reservation per SKU at a time, across every instance of the service. */
import { Body, Controller, Get, Inject, Param, Post, Put } from '@nestjs/common';
import { WithLock } from 'rxjs-lock/nestjs';
import { StockService } from './stock.service.js';

@Controller('inventory')
export class InventoryController {
  constructor(@Inject(StockService) private readonly stock: StockService) {}

  @Put(':sku')
  async restock(@Param('sku') sku: string, @Body() body: { units: number }): Promise<{ sku: string; units: number }> {
    await this.stock.restock(sku, body.units);
    return { sku, units: body.units };
  }

  @Get(':sku')
  async level(@Param('sku') sku: string): Promise<{ sku: string; units: number }> {
    return { sku, units: await this.stock.level(sku) };
  }

  /** Held until the Promise settles; a request still waiting after LOCK_WAIT_MS gets 409. */
  @Post(':sku/reservations')
  @WithLock('inventory:{params.sku}')
  reserve(@Param('sku') sku: string, @Body() body: { units: number }): Promise<{ reserved: boolean; left: number }> {
    return this.stock.reserve(sku, body.units);
  }
}
