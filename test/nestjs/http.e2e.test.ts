/**
 * End to end: real Nest applications (Express and Fastify) with @WithLock handlers, against a
 * private Redis. Two "instances" are two applications with their own Redis connections and
 * lockers, as two processes of a service would be.
 */
import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { filter, firstValueFrom } from 'rxjs';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import type { Locker, LockEvent } from '../../src/index.js';
import { LOCKER } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockedAppsOn, type Platform } from './fixtures/lockedApp.js';
import { Probe } from './fixtures/probe.js';
import { someoneWaitsInRedis } from './fixtures/redisLine.js';

const suite = redisSuite();

const released = (locker: Locker, key: string): Promise<LockEvent> =>
  firstValueFrom(locker.events$.pipe(filter((e) => e.type === 'released' && e.key === key)));

/** A GET that the client abandons once `onResponse` says so; resolves when the socket is closed. */
function abandonedGet(url: string, path: string, leaveAfter: (chunk: string) => boolean): { left: Promise<void> } {
  let resolveLeft!: () => void;
  const left = new Promise<void>((resolve) => (resolveLeft = resolve));
  const req = httpRequest(`${url}${path}`, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (leaveAfter(chunk)) req.destroy();
    });
  });
  req.on('error', () => undefined);
  req.on('close', () => resolveLeft());
  req.end();
  return { left, ...{ abort: () => req.destroy() } };
}

describe.each<Platform>(['express', 'fastify'])('@WithLock on %s', (platform) => {
  const start = lockedAppsOn(suite, platform);

  it('runs two requests on one key one after the other, across two instances', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const first = request(a.url)
      .post('/orders/1/first')
      .then((r) => r);
    await probe.waitFor('enter', 'order:1', 'a');
    expect(await suite.admin.exists('lock:order:1')).toBe(1);
    const second = request(b.url)
      .post('/orders/1/second')
      .then((r) => r);
    await someoneWaitsInRedis(suite.admin, 'order:1');
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1); // b waits
    probe.open('order:1:first');
    probe.open('order:1:second');
    const [r1, r2] = await Promise.all([first, second]);
    expect([r1.status, r2.status, r1.body.tag, r2.body.tag]).toEqual([201, 201, 'first', 'second']);
    const sections = probe.notes.filter((n) => n.key === 'order:1').map((n) => `${n.app}:${n.what}`);
    expect(sections).toEqual(['a:enter', 'a:exit', 'b:enter', 'b:exit']);
    expect(await suite.admin.exists('lock:order:1')).toBe(0);
  });

  it('answers 409 Conflict to a request on a busy key with waitTimeout 0; 423, 503 + Retry-After or a custom mapping as configured', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const first = request(a.url)
      .post('/orders/7/first')
      .then((r) => r);
    await probe.waitFor('enter', 'order:7', 'a');
    const conflict = await request(b.url).post('/now/orders/7/second');
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toMatch(/busy.*order:7/);
    expect((await request(b.url).post('/locked/orders/7/third')).status).toBe(423);
    const unavailable = await request(b.url).post('/unavailable/orders/7/fourth');
    expect([unavailable.status, unavailable.headers['retry-after']]).toEqual([503, '7']);
    const mapped = await request(b.url).post('/mapped/orders/7/sixth');
    expect([mapped.status, mapped.body]).toEqual([429, { busyKey: 'order:7' }]);
    // the same instance's second request is refused too (its local line)
    expect((await request(a.url).post('/now/orders/7/fifth')).status).toBe(409);
    probe.open('order:7:first');
    expect((await first).status).toBe(201);
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(1);
  });

  it('runs requests on different keys in parallel', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const one = request(a.url)
      .post('/orders/1/x')
      .then((r) => r);
    const two = request(a.url)
      .post('/orders/2/x')
      .then((r) => r);
    // both handlers are inside their sections at once: neither gate is open yet
    await Promise.all([probe.waitFor('enter', 'order:1'), probe.waitFor('enter', 'order:2')]);
    expect(await suite.admin.exists('lock:order:1', 'lock:order:2')).toBe(2);
    probe.open('order:1:x');
    probe.open('order:2:x');
    expect((await one).status).toBe(201);
    expect((await two).status).toBe(201);
  });

  it('releases the lock when the handler throws, and passes the handler error through', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const failed = await request(a.url).post('/fail/3');
    expect(failed.status).toBe(418);
    expect(await suite.admin.exists('lock:fail:3')).toBe(0);
    expect((await request(a.url).post('/fail/3')).status).toBe(418); // not 409: the lock is free
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(2);
  });

  it('releases the lock of an SSE stream when the client disconnects', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const locker = a.app.get<Locker>(LOCKER);
    const gone = released(locker, 'sse:5');
    let events = 0;
    const client = abandonedGet(a.url, '/sse/5', (chunk) => (events += (chunk.match(/data:/g) ?? []).length) >= 2);
    await probe.waitFor('sse-start', 'sse:5');
    await client.left;
    await probe.waitFor('sse-end', 'sse:5');
    await gone;
    expect(events).toBeGreaterThanOrEqual(2);
    expect(await suite.admin.exists('lock:sse:5')).toBe(0);
  });

  it('unsubscribes an Observable handler whose client disconnects mid-request, and releases its lock', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const locker = a.app.get<Locker>(LOCKER);
    const gone = released(locker, 'stream:4');
    const req = httpRequest(`${a.url}/stream/4`);
    req.on('error', () => undefined);
    req.end();
    await probe.waitFor('subscribed', 'stream:4');
    expect(await suite.admin.exists('lock:stream:4')).toBe(1);
    req.destroy();
    await probe.waitFor('unsubscribed', 'stream:4');
    await gone;
    expect(await suite.admin.exists('lock:stream:4')).toBe(0);
  });

  it('keeps the lock of a Promise handler whose client disconnected until the handler ends (no overlap)', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const locker = a.app.get<Locker>(LOCKER);
    const req = httpRequest(`${a.url}/slow/6`);
    req.on('error', () => undefined);
    req.end();
    await probe.waitFor('enter', 'slow:6');
    req.destroy();
    await probe.waitFor('client-gone', 'slow:6');
    expect(await suite.admin.exists('lock:slow:6')).toBe(1); // the handler still runs: still locked
    const gone = released(locker, 'slow:6');
    probe.open('slow:6:slow');
    await probe.waitFor('exit', 'slow:6');
    await gone;
    expect(await suite.admin.exists('lock:slow:6')).toBe(0);
    void b;
  });

  it('answers 500 with a clear message when the lease is lost while the handler runs, and stops the handler', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const lost = await request(a.url).get('/lost/8');
    expect(lost.status).toBe(500);
    expect(lost.body.message).toMatch(/"lost:8" was lost \(expired\) while the handler ran; its stream was stopped and its work may be incomplete/);
    await probe.waitFor('unsubscribed', 'lost:8');
  });

  it('answers 503 with Retry-After when the store does not answer', async () => {
    const probe = new Probe();
    const a = await start('a', probe, { locker: { commandTimeout: 150 } });
    probe.open('order:11:warm');
    expect((await request(a.url).post('/now/orders/11/warm')).status).toBe(201); // connected and working
    suite.server.pause();
    let unavailable: request.Response;
    try {
      unavailable = await request(a.url).post('/now/orders/12/paused');
    } finally {
      suite.server.resume();
    }
    expect([unavailable.status, unavailable.headers['retry-after']]).toEqual([503, '1']);
    expect(unavailable.body.message).toMatch(/lock service is unavailable/);
    expect(probe.notes.filter((n) => n.key === 'order:12')).toEqual([]);
  });

  it('answers 400 when a key template names a value the request lacks, and locks the value when present', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const missing = await request(a.url).get('/tenant');
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/headers\.x-tenant/);
    const ok = await request(a.url).get('/tenant').set('x-tenant', 'acme');
    expect([ok.status, ok.text]).toEqual([200, 'tenant acme']);
    expect(await suite.admin.keys('lock:tenant:*')).toEqual([]);
  });
});
