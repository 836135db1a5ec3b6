/**
 * LockModule's life: forRootAsync from @nestjs/config, what it closes at shutdown (what it made,
 * never what it was given), option errors, and class-level @WithLock.
 */
import 'reflect-metadata';
import { Controller, Get, Inject, Module, Param } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { isLockOptionsError, MemoryLockStore, type Locker } from '../../src/index.js';
import { InjectLocker, LOCKER, LockModule, WithLock } from '../../src/nestjs.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { LockedController } from './fixtures/LockedController.js';
import { APP_NAME, PROBE, Probe } from './fixtures/probe.js';

const suite = redisSuite();

/** Connections the server has open under `name` (ioredis `connectionName`). */
async function connectionsNamed(name: string): Promise<number> {
  const list = (await suite.admin.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
}

@Controller('by-class')
@WithLock('class:{params.id}', { waitTimeout: 0 })
class ClassLockedController {
  constructor(@InjectLocker() readonly locker: Locker) {}

  @Get(':id')
  byClass(): string {
    return 'class key';
  }

  @Get(':id/own')
  @WithLock('own:{params.id}', { waitTimeout: 0 })
  own(@Param('id') id: string): string {
    return `own ${id}`;
  }
}

describe('LockModule', () => {
  it('forRootAsync takes its options from a @nestjs/config factory', async () => {
    const probe = new Probe();
    @Module({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => ({ lock: { url: `redis://${suite.server.host}:${suite.server.port}`, prefix: 'cfg:' } })] }),
        LockModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({
            redis: config.getOrThrow<string>('lock.url'),
            locker: { keyPrefix: config.getOrThrow<string>('lock.prefix') },
          }),
          isGlobal: true,
        }),
      ],
      controllers: [LockedController],
      providers: [
        { provide: PROBE, useValue: probe },
        { provide: APP_NAME, useValue: 'cfg' },
      ],
    })
    class AppModule {}
    const app = (await Test.createTestingModule({ imports: [AppModule] }).compile()).createNestApplication({ logger: false });
    await app.init();
    suite.closers.push(async () => {
      probe.openAll();
      await app.close();
    });
    const pending = request(app.getHttpServer())
      .post('/orders/9/x')
      .then((r) => r);
    await probe.waitFor('enter', 'order:9');
    expect(await suite.admin.exists('cfg:order:9')).toBe(1);
    probe.open('order:9:x');
    expect((await pending).status).toBe(201);
    expect(await suite.admin.exists('cfg:order:9')).toBe(0);
  });

  it('closes the locker and the Redis connections it made when the application shuts down', async () => {
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap').length;
    const baseline = sockets();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port, connectionName: 'made-by-module' } })],
      controllers: [ClassLockedController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const locker = app.get<Locker>(LOCKER);
    expect((await request(app.getHttpServer()).get('/by-class/1')).status).toBe(200);
    expect(await connectionsNamed('made-by-module')).toBeGreaterThanOrEqual(1);
    await app.close();
    expect(locker.closed).toBe(true);
    expect(await connectionsNamed('made-by-module')).toBe(0);
    // nothing of the application is left open in this process either (a closed socket's handle
    // goes a few event-loop turns after the server saw it close)
    for (let turn = 0; turn < 200 && sockets() > baseline; turn++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(sockets()).toBeLessThanOrEqual(baseline);
  });

  it('shuts down without hanging when Redis does not answer', async () => {
    const app = (
      await Test.createTestingModule({
        imports: [
          LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port, connectionName: 'frozen-redis' }, locker: { commandTimeout: 300 } }),
        ],
        controllers: [ClassLockedController],
      }).compile()
    ).createNestApplication({ logger: false });
    await app.init();
    expect((await request(app.getHttpServer()).get('/by-class/4')).status).toBe(200);
    suite.server.pause();
    const started = performance.now();
    try {
      await app.close();
    } finally {
      suite.server.resume();
    }
    expect(performance.now() - started).toBeLessThan(10_000); // QUIT unanswered: disconnected after 2 s
    for (let turn = 0; turn < 200 && (await connectionsNamed('frozen-redis')) > 0; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await connectionsNamed('frozen-redis')).toBe(0);
  });

  it('never closes a client or a store it was given', async () => {
    const client = connect(suite.server, { connectionName: 'given-client' });
    suite.closers.push(() => client.quit());
    const store = new MemoryLockStore();
    for (const options of [{ client }, { store }]) {
      const app = (
        await Test.createTestingModule({ imports: [LockModule.forRoot(options)], controllers: [ClassLockedController] }).compile()
      ).createNestApplication({
        logger: false,
      });
      await app.init();
      expect((await request(app.getHttpServer()).get('/by-class/2')).status).toBe(200);
      await app.close();
    }
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    expect(await connectionsNamed('given-client')).toBe(1);
    expect(await store.tryAcquire('k', 't', 1000, 1)).toMatchObject({ acquired: true });
  });

  it("locks a class with @WithLock, a handler's own @WithLock replacing it (one lock, not two)", async () => {
    const app = (
      await Test.createTestingModule({ imports: [LockModule.forRoot({ client: suite.admin })], controllers: [ClassLockedController] }).compile()
    ).createNestApplication({ logger: false });
    await app.init();
    suite.closers.push(() => app.close());
    const locker = app.get<Locker>(LOCKER);
    const acquired = firstValueFrom(
      locker.events$.pipe(
        filter((e) => e.type === 'acquired'),
        take(2),
        toArray(),
      ),
    );
    expect((await request(app.getHttpServer()).get('/by-class/3')).text).toBe('class key');
    expect((await request(app.getHttpServer()).get('/by-class/3/own')).text).toBe('own 3');
    expect((await acquired).map((e) => e.key)).toEqual(['class:3', 'own:3']);
  });

  it('refuses bad options with a LockOptionsError naming the option', async () => {
    const failure = async (options: unknown) => {
      try {
        await Test.createTestingModule({ imports: [LockModule.forRoot(options as never)] }).compile();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const none = await failure({});
    expect(isLockOptionsError(none) && none.option).toBe('LockModule options.store');
    const both = await failure({ store: new MemoryLockStore(), redis: 'redis://x' });
    expect(isLockOptionsError(both) && both.message).toMatch(/exactly one of store, client or redis.*store and redis/);
    const unknown = await failure({ store: new MemoryLockStore(), ttl: 5 });
    expect(isLockOptionsError(unknown) && unknown.option).toBe('LockModule options.ttl');
    const badTtl = await failure({ store: new MemoryLockStore(), locker: { ttl: -1 } });
    expect(isLockOptionsError(badTtl) && badTtl.option).toBe('ttl');
    const badStatus = await failure({ store: new MemoryLockStore(), errors: { busyStatus: 404 } });
    expect(isLockOptionsError(badStatus) && badStatus.option).toBe('LockModule options.errors.busyStatus');

    const thrown = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(thrown(() => WithLock('order:{nope.id}'))).toMatchObject({ name: 'LockOptionsError', option: 'key' });
    expect(thrown(() => WithLock('order:{params.id'))).toMatchObject({ name: 'LockOptionsError', option: 'key' });
    expect(thrown(() => WithLock('k', { ttl: -1 }))).toMatchObject({ name: 'LockOptionsError', option: 'ttl' });
    expect(thrown(() => WithLock('k', { errors: { busyStatus: 404 as 409 } }))).toMatchObject({ name: 'LockOptionsError', option: 'errors.busyStatus' });
    expect(thrown(() => WithLock('k', { onDisconnect: 'never' as 'auto' }))).toMatchObject({ name: 'LockOptionsError', option: 'onDisconnect' });
    expect(thrown(() => WithLock('k', { wait: 5 } as never))).toMatchObject({ name: 'LockOptionsError' });
  });
});

void Inject;
