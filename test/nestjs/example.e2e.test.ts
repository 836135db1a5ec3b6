/**
 * Runs examples/nest: two instances of the example application on one private Redis, configured
 * through @nestjs/config (REDIS_URL), with reservations that must not lose an update, an SSE
 * route that is exclusive per report, and a scheduled job that runs on one instance per tick.
 */
import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { filter, firstValueFrom } from 'rxjs';
import request from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { AppModule } from '../../examples/nest/src/app.module.js';
import { SnapshotJob } from '../../examples/nest/src/snapshot.job.js';
import { StockService } from '../../examples/nest/src/stock.service.js';
import type { Locker } from '../../src/index.js';
import { LOCKER } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { NEST_MAJOR } from './fixtures/nestVersion.js';

const suite = redisSuite();

async function startExample(): Promise<{ app: INestApplication; url: string }> {
  const app = (await Test.createTestingModule({ imports: [AppModule] }).compile()).createNestApplication({ logger: false });
  // the tests fire the scheduled job themselves: the minute's tick must not add a run of its own
  // (the cron jobs start when the application starts listening: stopped as soon as it has)
  await app.listen(0, '127.0.0.1');
  for (const job of app.get(SchedulerRegistry).getCronJobs().values()) void job.stop();
  suite.closers.push(() => app.close());
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

/** Opens the SSE route; resolves with its status and a way to hang up. */
function openSse(url: string): Promise<{ status: number; firstEvent: Promise<string>; hangUp(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, (res) => {
      res.setEncoding('utf8');
      const firstEvent = new Promise<string>((resolveEvent) => {
        const onData = (chunk: string) => {
          if (!chunk.includes('data:')) return;
          res.off('data', onData);
          resolveEvent(chunk);
        };
        res.on('data', onData);
      });
      resolve({ status: res.statusCode ?? 0, firstEvent, hangUp: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('examples/nest', () => {
  beforeEach(() => {
    process.env.REDIS_URL = `redis://${suite.server.host}:${suite.server.port}`;
    process.env.LOCK_WAIT_MS = '30000';
  });

  it('two instances take 40 concurrent reservations without losing one', async () => {
    const [a, b] = [await startExample(), await startExample()];
    await request(a.url).put('/inventory/sku-1').send({ units: 100 }).expect(200);
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        request(i % 2 === 0 ? a.url : b.url)
          .post('/inventory/sku-1/reservations')
          .send({ units: 1 }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(40).fill(201));
    expect(replies.every((r) => r.body.reserved === true)).toBe(true);
    expect((await request(b.url).get('/inventory/sku-1')).body).toEqual({ sku: 'sku-1', units: 60 });
    // the same work without the lock loses updates: what the test would catch
    const stock = a.app.get(StockService);
    await stock.restock('sku-2', 100);
    await Promise.all(Array.from({ length: 10 }, () => stock.reserve('sku-2', 1)));
    expect(await stock.level('sku-2')).toBeGreaterThan(90);
  });

  it('runs the scheduled job on one instance when it fires on both at once; the other skips', async () => {
    const [a, b] = [await startExample(), await startExample()];
    const stock = a.app.get(StockService);
    await stock.restock('sku-1', 7);
    // the minute's tick, on both instances at the same moment
    await Promise.all([a.app.get(SnapshotJob).snapshot(), b.app.get(SnapshotJob).snapshot()]);
    expect((await stock.snapshots()).map((s) => s.levels)).toEqual([{ 'sku-1': 7 }]);
    expect(await suite.admin.exists('lock:job:stock-snapshot')).toBe(0);
    // the same work without the lock writes the minute twice: what the test would catch
    await Promise.all([stock.snapshot(), b.app.get(StockService).snapshot()]);
    expect(await stock.snapshots()).toHaveLength(3);
  });

  it('streams one build per report: a second client gets 409, and the lock goes with the first client', async () => {
    const { app, url } = await startExample();
    const locker = app.get<Locker>(LOCKER);
    const first = await openSse(`${url}/reports/r1/build`);
    suite.closers.push(() => first.hangUp());
    expect(first.status).toBe(200);
    expect(await first.firstEvent).toMatch(/"progress":2/);
    expect(await suite.admin.exists('lock:report:r1')).toBe(1);
    const second = await request(url).get('/reports/r1/build');
    if (NEST_MAJOR >= 11) {
      expect(second.status).toBe(409);
    } else {
      // Nest 10 sends an SSE response's 200 before the stream runs: the refusal comes as an
      // `error` event, and the stream ends
      expect(second.status).toBe(200);
      expect(second.text).toMatch(/event: error\nid: \d+\ndata: The resource is busy: Lock "report:r1"/);
    }
    const released = firstValueFrom(locker.events$.pipe(filter((e) => e.type === 'released' && e.key === 'report:r1')));
    first.hangUp();
    await released;
    expect(await suite.admin.exists('lock:report:r1')).toBe(0);
    const third = await openSse(`${url}/reports/r1/build`);
    expect(third.status).toBe(200);
    third.hangUp();
  });
});
