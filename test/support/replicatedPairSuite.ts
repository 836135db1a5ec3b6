/**
 * The hooks a test file of master/replica pairs repeats, registered by one call at its top: what
 * to close after each test (the last pushed first, each awaited), and unhandled rejections
 * collected while the file runs and expected to be none.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { replicatedPair, type ReplicatedPair } from './replicatedPair.js';
import { unhandledRejections } from './unhandled.js';

export interface ReplicatedPairSuite {
  /** What to close after the current test. */
  readonly closers: Array<() => unknown>;
  /** A new master/replica pair, stopped after the current test. */
  pair(): Promise<ReplicatedPair>;
}

export function replicatedPairSuite(): ReplicatedPairSuite {
  const rejections = unhandledRejections();
  const closers: Array<() => unknown> = [];
  beforeAll(() => rejections.start());
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(() => {
    rejections.stop();
    expect(rejections.seen).toEqual([]);
  });
  return {
    closers,
    async pair() {
      const servers = await replicatedPair();
      closers.push(() => servers.stop());
      return servers;
    },
  };
}
