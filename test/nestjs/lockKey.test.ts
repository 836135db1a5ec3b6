/** Key templates of @WithLock, on hand-made execution contexts. */
import type { ExecutionContext } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { isLockOptionsError } from '../../src/index.js';
import { compileLockKey, MissingKeyValueError } from '../../src/integrations/nestjs/lockKey.js';
import { escapeKeyPart } from '../../src/nestjs.js';

const http = (request: object) => ({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;
const rpc = (data: unknown) => ({ getType: () => 'rpc', switchToRpc: () => ({ getData: () => data }) }) as unknown as ExecutionContext;
const graphql = (args: unknown = {}) =>
  ({ getType: () => 'graphql', getArgByIndex: (i: number) => [{ parent: true }, args, {}, {}][i] }) as unknown as ExecutionContext;
const ws = { getType: () => 'ws' } as unknown as ExecutionContext;

const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
};

describe('key functions', () => {
  it('are called with the context, and may return a list of keys (as returned: neither escaped nor copied)', () => {
    const keys = ['sku:a:b', 'sku:c'];
    const seen: ExecutionContext[] = [];
    const context = http({});
    const list = compileLockKey((ctx) => {
      seen.push(ctx);
      return keys;
    });
    expect(list(context)).toBe(keys);
    expect(compileLockKey(() => 'one:{x}')(context)).toBe('one:{x}');
    expect(seen).toEqual([context]);
    expect(
      compileLockKey(function skus() {
        return [];
      }).source,
    ).toBe('skus');
  });
});

describe('key templates', () => {
  it('renders values of the request and of the payload', () => {
    const key = compileLockKey('t:{headers.x-tenant}/o:{params.id}/q:{query.v}/b:{body.a.b}/u:{user.id}/{body.flag}');
    const request = { headers: { 'x-tenant': 'acme' }, params: { id: '7' }, query: { v: 2 }, body: { a: { b: 10n }, flag: false }, user: { id: 'u1' } };
    expect(key(http(request))).toBe('t:acme/o:7/q:2/b:10/u:u1/false');
    expect(compileLockKey('acct:{data.account}')(rpc({ account: 42 }))).toBe('acct:42');
    expect(compileLockKey('static')(http({}))).toBe('static');
    expect(compileLockKey('post:{args.id}')(graphql({ id: 'p1' }))).toBe('post:p1');
  });

  it('escapes values, so that distinct values never render the same key nor forge a separator or hash tag', () => {
    const key = compileLockKey('order:{params.tenant}:{params.id}');
    expect(key(http({ params: { tenant: 'a:b', id: 'c' } }))).toBe('order:a%3Ab:c');
    expect(key(http({ params: { tenant: 'a', id: 'b:c' } }))).toBe('order:a:b%3Ac');
    expect(key(http({ params: { tenant: 'a%3Ab', id: 'c' } }))).toBe('order:a%253Ab:c');
    expect(key(http({ params: { tenant: '{slot}', id: 'x' } }))).toBe('order:%7Bslot%7D:x');
    // the exported escape gives the same key, for code outside a handler
    expect(`order:${escapeKeyPart('a:b')}:${escapeKeyPart('c')}`).toBe(key(http({ params: { tenant: 'a:b', id: 'c' } })));
    // everything else is kept as it was
    expect(key(http({ params: { tenant: 'ACME corp/ü', id: 'é-7' } }))).toBe('order:ACME corp/ü:é-7');
    // injective over many random pairs of values
    const alphabet = ['a', ':', '%', '3', 'A', '{', '}'];
    const seen = new Map<string, string>();
    for (let i = 0; i < 3000; i++) {
      const word = () => Array.from({ length: 1 + Math.floor(Math.random() * 4) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');
      const [tenant, id] = [word(), word()];
      const rendered = key(http({ params: { tenant, id } }));
      const pair = JSON.stringify([tenant, id]);
      expect(seen.get(rendered) ?? pair).toBe(pair);
      seen.set(rendered, pair);
    }
  });

  it('refuses a missing, empty, object or inherited value with an error naming the path, never "undefined"', () => {
    const key = compileLockKey('order:{params.id}');
    for (const params of [{}, { id: '' }, { id: { nested: 1 } }, { id: null }, { id: Number.NaN }, undefined]) {
      const error = failure(() => key(http({ params })));
      expect(error).toBeInstanceOf(MissingKeyValueError);
      expect(isLockOptionsError(error)).toBe(true);
      expect(error.message).toMatch(/key order:\{params\.id\}.*at params\.id/);
      expect(error.message).not.toMatch(/order:undefined/);
    }
    expect(failure(() => compileLockKey('x:{params.constructor}')(http({ params: {} })))).toBeInstanceOf(MissingKeyValueError);
    expect(failure(() => compileLockKey('x:{body.__proto__}')(http({ body: {} })))).toBeInstanceOf(MissingKeyValueError);
  });

  it('refuses a malformed template when the decorator is applied, and a root the context does not have', () => {
    for (const template of ['', 'a:{}', 'a:{nope.x}', 'a:{params..x}', 'a:{params.id', 'a:params.id}', 'a:{{params.id}}']) {
      expect(isLockOptionsError(failure(() => compileLockKey(template)))).toBe(true);
    }
    const http2rpc = failure(() => compileLockKey('a:{data.x}')(http({})));
    expect(http2rpc).not.toBeInstanceOf(MissingKeyValueError); // a programming error: 500, not 400
    expect(http2rpc.message).toMatch(/params, query, body, headers, user/);
    expect(failure(() => compileLockKey('a:{params.x}')(graphql())).message).toMatch(/placeholders a graphql handler has: args/);
    expect(failure(() => compileLockKey('a:{params.x}')(ws)).message).toMatch(/use a key function/);
  });

  it('calls a key function with the context', () => {
    const context = http({ params: { id: 'f' } });
    expect(compileLockKey((ctx) => `fn:${ctx.switchToHttp().getRequest<{ params: { id: string } }>().params.id}`)(context)).toBe('fn:f');
  });
});
