/**
 * End to end: real Nest applications serving GraphQL (Apollo driver, schema first, over Express)
 * with @WithLock and @WithPermit resolvers, against a private Redis. Two "instances" are two
 * applications with their own Redis connections and lockers. The README said GraphQL keys
 * (`args`) and failures (HttpExceptions turned into GraphQL errors) worked, untested end to end.
 */
import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { filter, firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Locker, LockEvent } from '../../src/index.js';
import { LOCKER, LockModule } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { until } from '../support/timing.js';
import { LockedResolver, ORDERS_SCHEMA } from './fixtures/LockedResolver.js';
import { gql } from './fixtures/graphqlClient.js';
import { APP_NAME, PROBE, Probe } from './fixtures/probe.js';
import { someoneWaitsInRedis } from './fixtures/redisLine.js';

const suite = redisSuite();

interface GraphqlApp {
  readonly app: INestApplication;
  readonly url: string;
  readonly locker: Locker;
}

async function start(name: string, probe: Probe): Promise<GraphqlApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port }, isGlobal: true }),
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        typeDefs: ORDERS_SCHEMA,
        // Nest runs interceptors on @ResolveField methods only when told to
        fieldResolverEnhancers: ['interceptors'],
        includeStacktraceInErrorResponses: false,
      }),
    ],
    providers: [LockedResolver, { provide: PROBE, useValue: probe }, { provide: APP_NAME, useValue: name }],
  }).compile();
  const app = moduleRef.createNestApplication();
  app.useLogger(false);
  await app.listen(0, '127.0.0.1');
  suite.closers.push(() => {
    probe.openAll();
    return app.close();
  });
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1'), locker: app.get<Locker>(LOCKER) };
}

const acquired = (locker: Locker, key: string): Promise<LockEvent> =>
  firstValueFrom(locker.events$.pipe(filter((e) => e.type === 'acquired' && e.key === key)));

describe('@WithLock on GraphQL resolvers (Apollo)', () => {
  it('runs two mutations on one key one after the other, across two instances', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const first = gql(a.url, 'mutation { ship(id: "1", tag: "first") { id tag } }');
    await probe.waitFor('enter', 'order:1', 'a');
    expect(await suite.admin.exists('lock:order:1')).toBe(1);
    const second = gql(b.url, 'mutation { ship(id: "1", tag: "second") { id tag } }');
    await someoneWaitsInRedis(suite.admin, 'order:1');
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1); // b waits
    probe.open('order:1:first');
    probe.open('order:1:second');
    const [r1, r2] = await Promise.all([first, second]);
    expect(r1).toEqual({ data: { ship: { id: '1', tag: 'first' } } });
    expect(r2).toEqual({ data: { ship: { id: '1', tag: 'second' } } });
    expect(probe.notes.filter((n) => n.key === 'order:1').map((n) => `${n.app}:${n.what}`)).toEqual(['a:enter', 'a:exit', 'b:enter', 'b:exit']);
    expect(await suite.admin.exists('lock:order:1')).toBe(0);
  });

  // Was a defect: the failure went out as an HttpException, which Nest's Apollo driver reports as
  // code INTERNAL_SERVER_ERROR for any status but 400, 401, 403 and 422 (the 409 hidden in
  // extensions.status): a client could not tell a busy lock from a server bug by its code.
  it('answers a busy key (waitTimeout 0) with a GraphQL error of code LOCK_BUSY and status 409, without running the resolver', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const first = gql(a.url, 'mutation { ship(id: "7", tag: "first") { id } }');
    await probe.waitFor('enter', 'order:7', 'a');
    const busy = await gql(b.url, 'mutation { shipNow(id: "7", tag: "second") { id } }');
    expect(busy.data).toBeNull();
    expect(busy.errors).toHaveLength(1);
    expect(busy.errors![0]!.message).toMatch(/busy.*order:7/);
    expect(busy.errors![0]!.extensions).toEqual({ code: 'LOCK_BUSY', status: 409 });
    expect(busy.errors![0]).toMatchObject({ path: ['shipNow'] });
    probe.open('order:7:first');
    expect(await first).toEqual({ data: { ship: { id: '7' } } });
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1);
  });

  it("says 503 and the retryAfter as configured, and leaves the error to the application's own mapping when it has one", async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const first = gql(a.url, 'mutation { ship(id: "8", tag: "first") { id } }');
    await probe.waitFor('enter', 'order:8', 'a');
    const unavailable = await gql(b.url, 'mutation { shipOr503(id: "8", tag: "second") { id } }');
    expect(unavailable.errors?.[0]?.extensions).toEqual({ code: 'LOCK_BUSY', status: 503, retryAfter: 7 });
    const mapped = await gql(b.url, 'mutation { shipMapped(id: "8", tag: "third") { id } }');
    expect(mapped.errors?.[0]).toMatchObject({ message: 'order busy, try again', extensions: { code: 'ORDER_BUSY', key: 'order:8' } });
    probe.open('order:8:first');
    expect(await first).toEqual({ data: { ship: { id: '8' } } });
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1);
  });

  it('answers an argument the operation lacks with a 400 error, and locks nothing', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const events: LockEvent[] = [];
    const seen = a.locker.events$.subscribe((e) => events.push(e));
    const missing = await gql(a.url, 'mutation { shipMaybe(tag: "x") { id } }');
    seen.unsubscribe();
    expect(missing.errors?.[0]?.extensions).toEqual({ code: 'LOCK_KEY_MISSING', status: 400 });
    expect(missing.errors?.[0]?.message).toMatch(/args\.id/);
    expect(probe.notes).toEqual([]);
    expect(events).toEqual([]);
    expect(await suite.admin.keys('*undefined*')).toEqual([]);
  });

  it('runs resolvers on different keys in parallel', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const one = gql(a.url, 'mutation { ship(id: "1", tag: "x") { id } }');
    const two = gql(a.url, 'mutation { ship(id: "2", tag: "x") { id } }');
    await Promise.all([probe.waitFor('enter', 'order:1'), probe.waitFor('enter', 'order:2')]);
    expect(await suite.admin.exists('lock:order:1', 'lock:order:2')).toBe(2);
    probe.open('order:1:x');
    probe.open('order:2:x');
    expect(await one).toEqual({ data: { ship: { id: '1' } } });
    expect(await two).toEqual({ data: { ship: { id: '2' } } });
  });

  it("releases the lock when the resolver throws, and passes the resolver's error through", async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const failed = await gql(a.url, 'mutation { fail(id: "3") { id } }');
    expect(failed.errors?.[0]?.message).toBe('resolver failed');
    expect(failed.errors?.[0]?.extensions?.originalError?.statusCode).toBe(418);
    expect(await suite.admin.exists('lock:fail:3')).toBe(0);
    const again = await gql(a.url, 'mutation { fail(id: "3") { id } }');
    expect(again.errors?.[0]?.message).toBe('resolver failed'); // not busy: the lock is free
  });

  it('locks every key a key function names before the resolver runs, as one query waits for a mutation on one of them', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const holding = gql(a.url, 'mutation { ship(id: "2", tag: "hold") { id } }');
    await probe.waitFor('enter', 'order:2', 'a');
    const listed = gql(b.url, 'query { orders(ids: ["1", "2", "3"], tag: "list") { id } }');
    await someoneWaitsInRedis(suite.admin, 'order:2');
    // the resolver runs only once it holds them all
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1);
    probe.open('order:2:hold');
    await probe.waitFor('enter', 'orders:1,2,3', 'b');
    expect(await suite.admin.exists('lock:order:1', 'lock:order:2', 'lock:order:3')).toBe(3);
    probe.open('orders:1,2,3:list');
    expect(await listed).toEqual({ data: { orders: [{ id: '1' }, { id: '2' }, { id: '3' }] } });
    expect(await holding).toEqual({ data: { ship: { id: '2' } } });
    expect(await suite.admin.exists('lock:order:1', 'lock:order:2', 'lock:order:3')).toBe(0);
  });

  it('locks a field resolver (with fieldResolverEnhancers: interceptors), on a key from its parent', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const audited = acquired(a.locker, 'audit:5');
    probe.open('order:5:read');
    const reply = await gql(a.url, 'query { order(id: "5") { id audit } }');
    expect(reply).toEqual({ data: { order: { id: '5', audit: 'audited 5' } } });
    await audited;
    // held elsewhere: the field fails alone, with a 409 error at its path
    await suite.admin.set('lock:audit:6', 'someone else', 'PX', 10_000);
    probe.open('order:6:read');
    const busy = await gql(a.url, 'query { order(id: "6") { id audit } }');
    expect(busy.errors?.[0]).toMatchObject({ path: ['order', 'audit'], extensions: { code: 'LOCK_BUSY', status: 409 } });
  });
});

describe('@WithPermit on a GraphQL mutation', () => {
  it('lets two holders in across instances and refuses a third with 409', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const one = gql(a.url, 'mutation { report(tag: "1") { tag } }');
    const two = gql(b.url, 'mutation { report(tag: "2") { tag } }');
    await until(() => probe.notes.filter((n) => n.what === 'enter' && n.key === 'reports').length === 2, 'two holders of reports');
    const third = await gql(a.url, 'mutation { report(tag: "3") { tag } }');
    expect(third.errors?.[0]?.extensions).toEqual({ code: 'LOCK_BUSY', status: 409 });
    probe.open('reports:1');
    probe.open('reports:2');
    expect(await one).toEqual({ data: { report: { tag: '1' } } });
    expect(await two).toEqual({ data: { report: { tag: '2' } } });
  });
});
