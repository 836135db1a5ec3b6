/** Adversarial end-to-end tests of @WithLock: disconnect timing and hostile key values. */
import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import type { ExecutionContext } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { compileLockKey, MissingKeyValueError } from '../../src/integrations/nestjs/lockKey.js';
import { redisSuite } from '../support/redisSuite.js';
import { lockedAppsOn, type Platform } from './fixtures/lockedApp.js';
import { Probe } from './fixtures/probe.js';
import { until } from '../support/timing.js';

const suite = redisSuite();

const waitersInRedis = async (key: string): Promise<number> => {
  let n = 0;
  for (const line of await suite.admin.keys(`rxjs-lock:line:*${key}*`)) n += await suite.admin.zcard(line);
  return n;
};

describe.each<Platform>(['express', 'fastify'])('@WithLock attacks on %s', (platform) => {
  const start = lockedAppsOn(suite, platform);

  it('a Promise handler whose client leaves while waiting for the lock leaves the line and never runs', async () => {
    // POST /orders/:id/:tag is async and waits up to 20 s: the waiter must leave the line long before
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const post = (url: string, path: string) => {
      const req = httpRequest(`${url}${path}`, { method: 'POST' });
      req.on('error', () => undefined);
      req.end();
      return req;
    };
    const first = post(a.url, '/orders/21/first');
    await probe.waitFor('enter', 'order:21', 'a');
    const second = post(b.url, '/orders/21/second');
    await until(async () => (await waitersInRedis('order:21')) > 0, "b's request waits in the Redis line");
    second.destroy();
    // the handler has not started: nothing is lost by cancelling the wait
    await until(async () => (await waitersInRedis('order:21')) === 0, 'the abandoned waiter leaves the Redis line', 12_000);
    probe.open('order:21:first');
    await probe.waitFor('exit', 'order:21', 'a');
    await until(async () => (await suite.admin.exists('lock:order:21')) === 0, 'the lock is free');
    expect(probe.notes.filter((n) => n.what === 'enter' && n.key === 'order:21').map((n) => n.app)).toEqual(['a']);
    first.destroy();
  }, 40_000);

  it('an Observable handler whose client leaves while waiting for the lock leaves the line and is never subscribed', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const get = (url: string, path: string) => {
      const req = httpRequest(`${url}${path}`);
      req.on('error', () => undefined);
      req.end();
      return req;
    };
    const first = get(a.url, '/stream/31');
    await probe.waitFor('subscribed', 'stream:31', 'a');
    const second = get(b.url, '/stream/31');
    await until(async () => (await waitersInRedis('stream:31')) > 0, "b's request waits in the Redis line");
    second.destroy();
    // well before the default waitTimeout (10 s)
    await until(async () => (await waitersInRedis('stream:31')) === 0, 'the abandoned waiter leaves the Redis line', 6_000);
    first.destroy();
    await probe.waitFor('unsubscribed', 'stream:31', 'a');
    await until(async () => (await suite.admin.exists('lock:stream:31')) === 0, 'the lock is free');
    expect(probe.notes.filter((n) => n.what === 'subscribed').map((n) => n.app)).toEqual(['a']);
  }, 30_000);

  it('an SSE client that leaves while waiting for the lock leaves the line, and nothing breaks', async () => {
    const probe = new Probe();
    const [a, b] = [await start('a', probe), await start('b', probe)];
    const get = (url: string, path: string) => {
      const req = httpRequest(`${url}${path}`, (res) => res.resume());
      req.on('error', () => undefined);
      req.end();
      return req;
    };
    const first = get(a.url, '/sse/32');
    await probe.waitFor('sse-start', 'sse:32', 'a');
    const second = get(b.url, '/sse/32');
    await until(async () => (await waitersInRedis('sse:32')) > 0, "b's request waits in the Redis line");
    second.destroy();
    await until(async () => (await waitersInRedis('sse:32')) === 0, 'the abandoned waiter leaves the Redis line', 6_000);
    first.destroy();
    await until(async () => (await suite.admin.exists('lock:sse:32')) === 0, 'the lock is free');
    expect(probe.notes.filter((n) => n.what === 'sse-start').map((n) => n.app)).toEqual(['a']);
    // b still serves requests after the abandoned one
    const third = get(b.url, '/sse/32');
    await probe.waitFor('sse-start', 'sse:32', 'b');
    third.destroy();
    await until(async () => (await suite.admin.exists('lock:sse:32')) === 0, 'the lock is free again');
  }, 30_000);

  it('a param with braces, a hash tag and a colon locks its escaped key in Redis and gives it back', async () => {
    const probe = new Probe();
    const a = await start('a', probe);
    const id = '{x}:}{y';
    const path = `/orders/${encodeURIComponent(id)}/t`;
    const req = httpRequest(`${a.url}${path}`, { method: 'POST' }, (res) => res.resume());
    req.on('error', () => undefined);
    req.end();
    await probe.waitFor('enter', `order:${id}`, 'a');
    // (escaped: a value cannot forge separators or a hash tag; see lockKey.test.ts)
    expect(await suite.admin.exists('lock:order:%7Bx%7D%3A%7D%7By')).toBe(1);
    probe.open(`order:${id}:t`);
    await probe.waitFor('exit', `order:${id}`, 'a');
    await until(async () => (await suite.admin.exists('lock:order:%7Bx%7D%3A%7D%7By')) === 0, 'the lock is free');
    expect(await suite.admin.keys('rxjs-lock:line:*')).toEqual([]);
  });
});

describe('hostile key templates', () => {
  const http = (request: object) => ({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;
  const fails = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('never reaches prototype properties', () => {
    for (const template of ['{params.__proto__}', '{params.constructor.name}', '{body.toString}', '{query.hasOwnProperty}', '{headers.__proto__.x}']) {
      const key = compileLockKey(template);
      expect(fails(() => key(http({ params: {}, body: {}, query: Object.create({ hasOwnProperty: 'x' }), headers: {} })))).toBeInstanceOf(MissingKeyValueError);
    }
    // a JSON body with an own "__proto__" key is an own property: it is used as a plain value
    const body = JSON.parse('{"__proto__": "p"}') as object;
    expect(compileLockKey('x:{body.__proto__}')(http({ body }))).toBe('x:p');
  });

  it('refuses templates that cannot be parsed', () => {
    for (const template of ['{params.id', 'params.id}', '{{params.id}}', '{}', '{params.}', '{process.env}', '{constructor.name}', '']) {
      expect(
        fails(() => compileLockKey(template)),
        template,
      ).toBeDefined();
    }
  });

  it('escapes braces in values (no forged hash tag) and keeps huge lengths (the locker checks the length)', () => {
    const key = compileLockKey('order:{params.id}');
    expect(key(http({ params: { id: '{params.id}' } }))).toBe('order:%7Bparams.id%7D');
    expect(key(http({ params: { id: '{tag}x' } }))).toBe('order:%7Btag%7Dx');
    expect(key(http({ params: { id: 'a'.repeat(100_000) } }))).toHaveLength(100_006);
  });

  it('an array header (repeated header) is not a usable key value', () => {
    const key = compileLockKey('t:{headers.x-tenant}');
    expect(fails(() => key(http({ headers: { 'x-tenant': ['a', 'b'] } })))).toBeInstanceOf(MissingKeyValueError);
  });
});
