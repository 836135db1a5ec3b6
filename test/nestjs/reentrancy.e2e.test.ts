/**
 * Reentrancy in a Nest request: a @WithLock handler calls a service that takes the same key with
 * withLock/using (Observable and async): the service joins the request's lease (same token and
 * fence, one acquisition), and two requests on one key still take turns with leases of their own.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { filter, lastValueFrom } from 'rxjs';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import type { Locker, LockEvent } from '../../src/index.js';
import { LOCKER, LockModule } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { OrderService, ReentrantController, SECTIONS, type Sections } from './fixtures/ReentrantOrders.js';

const suite = redisSuite();

async function start(): Promise<{ app: INestApplication; locker: Locker; sections: Sections; acquired: LockEvent[] }> {
  const sections: Sections = [];
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port }, locker: { reentrant: true } })],
    controllers: [ReentrantController],
    providers: [OrderService, { provide: SECTIONS, useValue: sections }],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  suite.closers.push(() => app.close());
  const locker = app.get<Locker>(LOCKER);
  const acquired: LockEvent[] = [];
  locker.events$.pipe(filter((e) => e.type === 'acquired')).subscribe((e) => acquired.push(e));
  return { app, locker, sections, acquired };
}

describe('reentrancy in a Nest request', () => {
  it("a service taking the handler's key again joins the request's lease: one acquisition, same token and fence", async () => {
    const { app, locker, acquired } = await start();
    const response = await request(app.getHttpServer()).post('/reentrant/orders/1');
    expect(response.status).toBe(201);
    const { reserved, charged } = response.body as { reserved: { token: string; fence: number }; charged: { token: string; fence: number } };
    expect(charged).toEqual(reserved);
    expect(acquired).toHaveLength(1);
    expect(acquired[0]).toMatchObject({ key: 'order:1', token: reserved.token, fence: reserved.fence });
    expect(await lastValueFrom(locker.isLocked('order:1'))).toBe(false);
    expect(await suite.admin.exists('lock:order:1')).toBe(0);
  });

  it("a @WithWriteLock handler's service reading the same key joins the write lock (one read-write holder), instead of waiting for it", async () => {
    const { app, locker, acquired } = await start();
    const response = await request(app.getHttpServer()).post('/reentrant/catalogues/7');
    expect(response.status).toBe(201);
    const { read } = response.body as { read: { token: string; fence: number } };
    expect(acquired).toHaveLength(1);
    expect(acquired[0]).toMatchObject({ key: 'catalogue:7', token: read.token, fence: read.fence });
    expect(await lastValueFrom(locker.isReadLocked('catalogue:7'))).toBe(false);
  });

  it('two requests on one key do not share: they take turns, each with its own lease', async () => {
    const { app, sections } = await start();
    const server = app.getHttpServer();
    const [a, b] = await Promise.all([request(server).post('/reentrant/orders/2'), request(server).post('/reentrant/orders/2')]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.reserved.token === b.body.reserved.token && a.body.reserved.fence === b.body.reserved.fence).toBe(false);
    expect(a.body.charged).toEqual(a.body.reserved);
    expect(b.body.charged).toEqual(b.body.reserved);
    expect(sections.map((s) => s.what)).toEqual(['enter', 'exit', 'enter', 'exit']);
  });
});
