/**
 * End to end: real Nest applications (Express and Fastify), two "instances" with their own Redis
 * connections and lockers, handlers under several keys (`@WithLock([...])`), a semaphore
 * (`@WithPermit`) and a read-write lock (`@WithReadLock` / `@WithWriteLock`) — key templates with
 * escaped values, all-or-none sets in one global order, limits, writer exclusion, error answers —
 * and the decorators' option checks.
 */
import 'reflect-metadata';
import request from 'supertest';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Locker } from '../../src/index.js';
import { LOCKER, WithLock, WithPermit, WithReadLock, WithWriteLock } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockedAppsOn, type LockedApp, type Platform } from './fixtures/lockedApp.js';
import { Probe } from './fixtures/probe.js';
import { SharedLockedController } from './fixtures/SharedLockedController.js';
import { until } from '../support/timing.js';
import { optionOf } from '../support/optionOf.js';

const suite = redisSuite();

const lockerOf = (app: LockedApp): Locker => app.app.get<Locker>(LOCKER);
const entered = (probe: Probe, gate: string) => probe.notes.some((n) => n.what === 'enter' && n.key === gate);

describe.each<Platform>(['express', 'fastify'])('shared and multi-key lock decorators on %s', (platform) => {
  const start = lockedAppsOn(suite, platform, [SharedLockedController]);

  it('@WithLock([...]): both keys or none, one global order across instances; disjoint sets run side by side', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const t1 = request(a.url)
      .post('/transfers/t1')
      .send({ from: '1', to: '2' })
      .then((r) => r);
    await probe.waitFor('enter', 'transfer:t1');
    expect([await suite.admin.exists('lock:account:1'), await suite.admin.exists('lock:account:2')]).toEqual([1, 1]);
    // the reverse transfer waits (in Redis's line for account:1, the first key in lock order)
    const t2 = request(b.url)
      .post('/transfers/t2')
      .send({ from: '2', to: '1' })
      .then((r) => r);
    await until(async () => (await lastValueFrom(lockerOf(a).inspect('account:1')))?.waiting === 1, 'b waits for account:1');
    // another pair runs meanwhile
    const t3 = request(b.url)
      .post('/transfers/t3')
      .send({ from: '3', to: '4' })
      .then((r) => r);
    await probe.waitFor('enter', 'transfer:t3');
    probe.open('transfer:t3');
    expect(entered(probe, 'transfer:t2')).toBe(false);
    probe.open('transfer:t1');
    await probe.waitFor('enter', 'transfer:t2');
    probe.open('transfer:t2');
    expect((await Promise.all([t1, t2, t3])).map((r) => r.status)).toEqual([201, 201, 201]);
    const order = probe.notes.filter((n) => n.key === 'transfer:1>2' || n.key === 'transfer:2>1').map((n) => `${n.what}:${n.key}`);
    expect(order).toEqual(['enter:transfer:1>2', 'exit:transfer:1>2', 'enter:transfer:2>1', 'exit:transfer:2>1']);
    expect(await suite.admin.exists('lock:account:1', 'lock:account:2', 'lock:account:3', 'lock:account:4')).toBe(0);
  });

  it('@WithLock([...]): values escaped in every key; busy → 409 with nothing left held; a missing value → 400', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const held = request(a.url)
      .post('/transfers/h')
      .send({ from: 'x:y', to: '{z}' })
      .then((r) => r);
    await probe.waitFor('enter', 'transfer:h');
    expect(await suite.admin.exists('lock:account:x%3Ay', 'lock:account:%7Bz%7D')).toBe(2);
    // '0' sorts before 'x%3Ay': taken first, then given back when 'x%3Ay' is busy
    const busy = await request(b.url).post('/transfers-now/n').send({ from: '0', to: 'x:y' });
    expect(busy.status).toBe(409);
    expect(await suite.admin.exists('lock:account:0')).toBe(0);
    expect((await request(b.url).post('/transfers-now/m').send({ from: '5' })).status).toBe(400);
    probe.open('transfer:h');
    expect((await held).status).toBe(201);
  });

  it('@WithLock(key function returning a list): every key the request names, all or none across instances; an empty list locks nothing', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const o1 = request(a.url)
      .post('/orders/o1')
      .send({ skus: ['p:1', 'p2', 'p3'] })
      .then((r) => r);
    await probe.waitFor('enter', 'order:o1');
    // each SKU its own key, values escaped as a template escapes them
    expect(await suite.admin.exists('lock:sku:p%3A1', 'lock:sku:p2', 'lock:sku:p3')).toBe(3);
    // shares p3 with o1: waits on the other instance, holding none of its keys meanwhile
    const o2 = request(b.url)
      .post('/orders/o2')
      .send({ skus: ['p4', 'p3'] })
      .then((r) => r);
    await until(async () => (await lastValueFrom(lockerOf(b).inspect('sku:p3')))?.waiting === 1, 'o2 waits for p3');
    expect(await suite.admin.exists('lock:sku:p4')).toBe(0);
    // a disjoint order, and an empty one, run at once
    const o3 = request(b.url)
      .post('/orders/o3')
      .send({ skus: ['p5'] })
      .then((r) => r);
    await probe.waitFor('enter', 'order:o3');
    const o4 = request(a.url)
      .post('/orders/o4')
      .send({ skus: [] })
      .then((r) => r);
    await probe.waitFor('enter', 'order:o4');
    // a template beside the list: busy on p2 → 409 at once, the warehouse and p1… given back
    const busy = await request(b.url)
      .post('/orders-now/w1/n')
      .send({ skus: ['p0', 'p2'] });
    expect(busy.status).toBe(409);
    expect(await suite.admin.exists('lock:warehouse:w1', 'lock:sku:p0')).toBe(0);
    probe.open('order:o3');
    probe.open('order:o4');
    expect(entered(probe, 'order:o2')).toBe(false);
    probe.open('order:o1');
    await probe.waitFor('enter', 'order:o2');
    probe.open('order:o2');
    expect((await Promise.all([o1, o2, o3, o4])).map((r) => r.status)).toEqual([201, 201, 201, 201]);
    const order = probe.notes.filter((n) => n.key === 'order:p:1,p2,p3' || n.key === 'order:p4,p3').map((n) => `${n.what}:${n.key}`);
    expect(order).toEqual(['enter:order:p:1,p2,p3', 'exit:order:p:1,p2,p3', 'enter:order:p4,p3', 'exit:order:p4,p3']);
    expect(await suite.admin.exists('lock:sku:p%3A1', 'lock:sku:p2', 'lock:sku:p3', 'lock:sku:p4', 'lock:sku:p5')).toBe(0);
  });

  it('@WithPermit: at most `limit` permits per resolved key across instances, FIFO; a 2-permit request with waitTimeout 0 → 503 + Retry-After', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const tenant = encodeURIComponent('t:1');
    const r1 = request(a.url)
      .post(`/render/${tenant}/r1`)
      .then((r) => r);
    const r2 = request(b.url)
      .post(`/render/${tenant}/r2`)
      .then((r) => r);
    await Promise.all([probe.waitFor('enter', 'render:r1'), probe.waitFor('enter', 'render:r2')]);
    const r3 = request(a.url)
      .post(`/render/${tenant}/r3`)
      .then((r) => r);
    // the template's value is escaped: the semaphore is renderer:t%3A1
    await until(async () => (await lastValueFrom(lockerOf(b).inspectPermits('renderer:t%3A1')))?.waiting === 1, 'r3 waits in line');
    expect((await lastValueFrom(lockerOf(b).inspectPermits('renderer:t%3A1')))?.used).toBe(2);
    const all = await request(b.url).post(`/render-all/${tenant}/r4`);
    expect([all.status, all.headers['retry-after']]).toEqual([503, '3']);
    // another tenant has permits of its own
    const other = request(b.url)
      .post('/render/other/o1')
      .then((r) => r);
    await probe.waitFor('enter', 'render:o1');
    probe.open('render:o1');
    expect(entered(probe, 'render:r3')).toBe(false);
    probe.open('render:r1');
    await probe.waitFor('enter', 'render:r3');
    probe.open('render:r2');
    probe.open('render:r3');
    expect((await Promise.all([r1, r2, r3, other])).map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(await lastValueFrom(lockerOf(a).inspectPermits('renderer:t%3A1'))).toBeNull();
  });

  it('@WithReadLock / @WithWriteLock: readers share across instances, a writer waits for them, and a reader after a waiting writer waits behind it', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const c1 = request(a.url)
      .get('/config/app/c1')
      .then((r) => r);
    const c2 = request(b.url)
      .get('/config/app/c2')
      .then((r) => r);
    await Promise.all([probe.waitFor('enter', 'config:c1'), probe.waitFor('enter', 'config:c2')]);
    const w = request(a.url)
      .put('/config/app/w')
      .then((r) => r);
    await until(async () => (await lastValueFrom(lockerOf(b).inspectPermits('config:app')))?.waiting === 1, 'the writer waits');
    const c3 = request(b.url)
      .get('/config/app/c3')
      .then((r) => r);
    await until(async () => (await lastValueFrom(lockerOf(b).inspectPermits('config:app')))?.waiting === 2, 'the late reader waits');
    expect(await lastValueFrom(lockerOf(b).isWriteLocked('config:app'))).toBe(false);
    probe.open('config:c1');
    probe.open('config:c2');
    await probe.waitFor('enter', 'config:w');
    expect(await lastValueFrom(lockerOf(b).isWriteLocked('config:app'))).toBe(true);
    expect(entered(probe, 'config:c3')).toBe(false);
    probe.open('config:w');
    await probe.waitFor('enter', 'config:c3');
    probe.open('config:c3');
    expect((await Promise.all([c1, c2, w, c3])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const sections = probe.notes.filter((n) => n.key === 'config:app').map((n) => n.what);
    expect(sections).toEqual(['enter', 'enter', 'exit', 'exit', 'enter', 'exit', 'enter', 'exit']);
  });
});

describe('the decorators check their options when the class is defined', () => {
  it('throws LockOptionsError naming the option', () => {
    const cases: Array<[() => unknown, string]> = [
      [() => WithPermit('k', {} as never), 'limit'],
      [() => WithPermit('k', { limit: 2, permits: 3 }), 'permits'],
      [() => WithPermit('k', { limit: 2, onBusy: 'skip' } as never), 'options.onBusy'],
      [() => WithPermit('k', null as never), 'WithPermit options'],
      [() => WithLock([]), 'keys'],
      [() => WithLock(['a:{nope.x}']), 'key'],
      [() => WithLock(['a', 'b'], { waitTimeout: -1 }), 'waitTimeout'],
      [() => WithReadLock('k', { reentrant: 'yes' } as never), 'reentrant'],
      [() => WithPermit('k', { limit: 2, reentrant: true } as never), 'options.reentrant'],
      [() => WithWriteLock('', {}), 'key'],
      [() => WithWriteLock('k', { onDisconnect: 'later' as never }), 'onDisconnect'],
    ];
    for (const [decorate, option] of cases) expect(optionOf(decorate), option).toBe(option);
  });
});
