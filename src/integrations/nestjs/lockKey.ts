/**
 * Lock keys of `@WithLock`: a template over the request or the RPC payload
 * (`'order:{params.id}'`), or a function of the execution context. A template is parsed once, when
 * the decorator is applied; a value it names that the request lacks is an error, never the string
 * "undefined".
 */
import type { ExecutionContext } from '@nestjs/common';
import { LockOptionsError } from '../../errors/errors.js';

/**
 * The key of a `@WithLock` lock: a template, or a function of the `ExecutionContext` that returns
 * the key (called once per request or message, before the lock is taken).
 *
 * A template's `{path}` placeholders name a value of the request: `params`, `query`, `body`,
 * `headers` (lower-case names) or `user` for HTTP, `data` (the payload) for microservice
 * handlers, `args` (the field's arguments) for GraphQL resolvers; then property names separated by
 * dots (`{body.customer.id}`). A value must be a
 * non-empty string, a finite number, a bigint or a boolean.
 *
 * Values are escaped before they go in: `%`, `:`, `{` and `}` become `%25`, `%3A`, `%7B` and `%7D`
 * (the rest is kept as is). So two requests get the same key only when they name the same
 * values: with `'order:{params.tenant}:{params.id}'`, tenant `a:b` with id `c` and tenant `a`
 * with id `b:c` lock different keys (`order:a%3Ab:c`, `order:a:b%3Ac`), and a value cannot forge
 * the separators or a Redis Cluster hash tag of the template around it. A key function's result is
 * used as returned.
 *
 * @example
 * ```ts
 * @WithLock('order:{params.id}')                                    // a template
 * @WithLock((ctx) => `tenant:${ctx.switchToHttp().getRequest().tenant.id}`) // a function
 * ```
 */
export type LockKey = string | ((context: ExecutionContext) => string);

/**
 * A key of `@WithLock`: a {@link LockKey}, or a function of the `ExecutionContext` that returns
 * several keys — a list whose length depends on the request or message (the SKUs of an order, the
 * accounts of a batch). A function's list is locked as `@WithLock([...])` locks its keys: all or
 * none, in one global order, one `waitTimeout` for the set, at most 64 distinct keys. An empty list names
 * nothing to protect: the handler then runs without a lock.
 *
 * @example
 * ```ts
 * // one order's SKUs, however many there are: two orders that share a SKU never run together
 * @WithLock((ctx) => ctx.switchToHttp().getRequest().body.items.map((item: { sku: string }) => `sku:${escapeKeyPart(item.sku)}`))
 * ```
 */
export type LockKeys = string | ((context: ExecutionContext) => string | readonly string[]);

/** Where a template's values come from. */
const HTTP_ROOTS = ['params', 'query', 'body', 'headers', 'user'] as const;
const RPC_ROOTS = ['data'] as const;
const GRAPHQL_ROOTS = ['args'] as const;
const ROOTS: readonly string[] = [...HTTP_ROOTS, ...RPC_ROOTS, ...GRAPHQL_ROOTS];

/** A compiled key: what computes it, and the template it came from (for messages). */
export interface KeyResolver {
  readonly source: string;
  (context: ExecutionContext): string;
}

/** A compiled `@WithLock` key: one key, or a key function's list of them. */
export interface KeysResolver {
  readonly source: string;
  (context: ExecutionContext): string | readonly string[];
}

/**
 * The key's value named by a template is missing or not usable as a key part. Raised while the
 * request is served; the interceptor answers it with 400 Bad Request (HTTP) or an `RpcException`.
 */
export class MissingKeyValueError extends LockOptionsError {}

type Part = string | { readonly root: string; readonly path: readonly string[]; readonly text: string };

/** Compiles `key` (throws `LockOptionsError` for a malformed template or a wrong type). */
export function compileLockKey(key: LockKey): KeyResolver;
/** Compiles a `@WithLock` key, whose function may return a list of keys. */
export function compileLockKey(key: LockKeys): KeysResolver;
export function compileLockKey(key: LockKeys): KeysResolver {
  if (typeof key === 'function') {
    const resolver = (context: ExecutionContext) => key(context);
    return Object.assign(resolver, { source: key.name || 'a key function' });
  }
  if (typeof key !== 'string' || key.length === 0) {
    throw new LockOptionsError('key', "a non-empty template such as 'order:{params.id}', or a function of the ExecutionContext", key);
  }
  const parts = parseTemplate(key);
  const resolver = (context: ExecutionContext) => render(key, parts, context);
  return Object.assign(resolver, { source: key });
}

function parseTemplate(template: string): Part[] {
  const parts: Part[] = [];
  const placeholder = /\{([^{}]*)\}/g;
  let last = 0;
  for (let match = placeholder.exec(template); match !== null; match = placeholder.exec(template)) {
    parts.push(template.slice(last, match.index));
    last = match.index + match[0].length;
    const text = match[1]!.trim();
    const path = text.split('.');
    const root = path.shift()!;
    if (!ROOTS.includes(root) || path.some((name) => name.length === 0)) {
      throw new LockOptionsError('key', `placeholders of the form {root.path} with root one of ${ROOTS.join(', ')} (e.g. 'order:{params.id}')`, template);
    }
    parts.push({ root, path, text });
  }
  const rest = template.slice(last);
  if (/[{}]/.test(rest) || parts.some((p) => typeof p === 'string' && /[{}]/.test(p))) {
    throw new LockOptionsError('key', "balanced placeholders such as 'order:{params.id}' (a { or } outside a placeholder is not allowed)", template);
  }
  parts.push(rest);
  return parts;
}

function render(template: string, parts: readonly Part[], context: ExecutionContext): string {
  let key = '';
  for (const part of parts) {
    if (typeof part === 'string') {
      key += part;
      continue;
    }
    key += keyValue(template, part.text, lookup(rootOf(template, part.root, context), part.path));
  }
  return key;
}

function rootOf(template: string, root: string, context: ExecutionContext): unknown {
  const type = context.getType<string>();
  if (type === 'http' && (HTTP_ROOTS as readonly string[]).includes(root)) {
    return (context.switchToHttp().getRequest() as Record<string, unknown>)[root];
  }
  if (type === 'rpc' && root === 'data') return context.switchToRpc().getData();
  // A resolver is called with (parent, args, context, info): no need for @nestjs/graphql here.
  if (type === 'graphql' && root === 'args') return context.getArgByIndex(1);
  const roots =
    type === 'http'
      ? HTTP_ROOTS.join(', ')
      : type === 'rpc'
        ? RPC_ROOTS.join(', ')
        : type === 'graphql'
          ? GRAPHQL_ROOTS.join(', ')
          : 'none (use a key function)';
  throw new LockOptionsError('key', `placeholders a ${type} handler has: ${roots}`, template);
}

function lookup(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const name of path) {
    if (current === null || typeof current !== 'object') return undefined;
    // Own properties only: a template must not reach `constructor` or `__proto__`.
    if (!Object.hasOwn(current, name)) return undefined;
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

function keyValue(template: string, text: string, value: unknown): string {
  if (typeof value === 'string' && value.length > 0) return escapeKeyPart(value);
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  throw new MissingKeyValueError(`key ${template}`, `a non-empty string, a finite number, a bigint or a boolean at ${text}`, value);
}

/** The characters a value may not bring into a key as they are: the escape itself, the usual separator, hash-tag braces. */
const RESERVED = /[%:{}]/g;

/**
 * A value as a part of a key, as `@WithLock` key templates put it in: `%`, `:`, `{` and `}`
 * percent-encoded (`%25`, `%3A`, `%7B`, `%7D`), so distinct values stay distinct keys and a value
 * cannot forge a separator or a Redis Cluster hash tag. For code that locks the same key a
 * template does, outside a decorated handler.
 *
 * @example
 * ```ts
 * import { escapeKeyPart } from 'rxjs-lock/nestjs';
 * // the key of @WithLock('order:{params.tenant}:{params.id}') for this request's values
 * const key = `order:${escapeKeyPart(tenant)}:${escapeKeyPart(id)}`;
 * locker.using(key, () => repairOrder(tenant, id)).subscribe();
 * ```
 */
export function escapeKeyPart(value: string): string {
  return value.replace(RESERVED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
