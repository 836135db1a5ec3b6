/**
 * Stock levels in Redis, updated by read-modify-write: without a lock, two instances that reserve
 * the same SKU at once both read the same level and one reservation is lost.
 */
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';

@Injectable()
export class StockService implements OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(@Inject(ConfigService) config: ConfigService) {
    this.redis = new Redis(config.getOrThrow<string>('REDIS_URL'));
  }

  async restock(sku: string, units: number): Promise<void> {
    await this.redis.set(`stock:${sku}`, units);
  }

  async level(sku: string): Promise<number> {
    return Number((await this.redis.get(`stock:${sku}`)) ?? 0);
  }

  /** Takes `units` off the level if there are enough; the caller holds the SKU's lock. */
  async reserve(sku: string, units: number): Promise<{ reserved: boolean; left: number }> {
    const level = await this.level(sku);
    await sleep(5); // a pricing call, a database round trip…: the window a lost update needs
    if (level < units) return { reserved: false, left: level };
    await this.redis.set(`stock:${sku}`, level - units);
    return { reserved: true, left: level - units };
  }

  /**
   * Appends every SKU's level to the history (`stock:snapshots`), with the time. Not idempotent:
   * two instances that run it for the same minute write it twice (see SnapshotJob).
   */
  async snapshot(): Promise<void> {
    const levels: Record<string, number> = {};
    for await (const keys of this.redis.scanStream({ match: 'stock:*' }) as AsyncIterable<string[]>) {
      for (const key of keys) {
        if (key !== 'stock:snapshots') levels[key.slice('stock:'.length)] = Number(await this.redis.get(key));
      }
    }
    await sleep(20); // a report to render, say: the window in which a second run would overlap
    await this.redis.rpush('stock:snapshots', JSON.stringify({ at: new Date().toISOString(), levels }));
  }

  async snapshots(): Promise<Array<{ at: string; levels: Record<string, number> }>> {
    return (await this.redis.lrange('stock:snapshots', 0, -1)).map((entry) => JSON.parse(entry));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
