/**
 * The hooks a Redis test file repeats, registered by one call (at the top of the file, or of a
 * describe block): a private server started before the tests and stopped after them, an admin
 * client on it, FLUSHALL before each test, closers run after each test, and unhandled rejections
 * collected while the tests run and expected to be none.
 *
 * Hooks the file registers after the call run after the suite's `before*` hooks and before its
 * `after*` hooks (vitest runs after-hooks in reverse order): a file's own clients are opened once
 * the server runs and closed before it stops.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { connect, EmbeddedRedis } from './redis.js';
import { unhandledRejections } from './unhandled.js';

export interface RedisSuiteOptions {
  /** redis-server arguments (none by default). */
  readonly args?: string[];
  /** FLUSHALL before each test (the default), or not (false). */
  readonly flush?: boolean;
  /**
   * Unhandled rejections must be none after the last test (the default), after each test, or are
   * not collected ('off').
   */
  readonly unhandled?: 'afterAll' | 'afterEach' | 'off';
}

export interface RedisSuite {
  /** The suite's server (from beforeAll on). */
  readonly server: EmbeddedRedis;
  /** A client of the server, `connect(server)` (from beforeAll on). */
  readonly admin: Redis;
  /** What to close after the current test: run after it, the last pushed first, each awaited. */
  readonly closers: Array<() => unknown>;
}

export function redisSuite(options: RedisSuiteOptions = {}): RedisSuite {
  const { args, flush = true, unhandled = 'afterAll' } = options;
  const rejections = unhandledRejections();
  const closers: Array<() => unknown> = [];
  let server: EmbeddedRedis | undefined;
  let admin: Redis | undefined;

  beforeAll(async () => {
    if (unhandled !== 'off') rejections.start();
    server = await EmbeddedRedis.start(args === undefined ? {} : { args });
    admin = connect(server);
  });
  afterAll(async () => {
    rejections.stop();
    admin?.disconnect();
    await server?.stop();
    if (unhandled === 'afterAll') expect(rejections.seen).toEqual([]);
  });
  if (flush) {
    beforeEach(async () => {
      await admin!.flushall();
    });
  }
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    if (unhandled === 'afterEach') expect(rejections.seen).toEqual([]);
  });

  return {
    get server() {
      if (server === undefined) throw new Error('redisSuite: the server starts in beforeAll');
      return server;
    },
    get admin() {
      if (admin === undefined) throw new Error('redisSuite: the admin client connects in beforeAll');
      return admin;
    },
    closers,
  };
}
