/**
 * The one-server references script-floor and fenced-floor (bench/adapters/scriptFloors.ts) against
 * a real Redis: each is a lock (excludes, gives back), and fenced-floor refuses a key that has a
 * line, a place or a fence record beside it, as the store's common path does, where script-floor
 * does not look. The bench trusts their figures only if they do the work they are said to do.
 */
import { describe, expect, it } from 'vitest';
import { createFencedFloor, createScriptFloor } from '../../bench/adapters/scriptFloors.js';
import { AcquireTimeout, type AdapterContext, type LockAdapter } from '../../bench/adapters/types.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();
const LIMITS = { waitTimeoutMs: 40, ttlMs: 10_000 };

async function adapterOn(create: (ctx: AdapterContext) => Promise<LockAdapter>): Promise<LockAdapter> {
  const redis = connect(suite.server);
  suite.closers.push(() => redis.disconnect());
  const ctx: AdapterContext = {
    nodeCount: 1,
    connect: async () => redis,
    connectNodes: async () => [redis],
  };
  return create(ctx);
}

describe.each([
  ['script-floor', createScriptFloor],
  ['fenced-floor', createFencedFloor],
] as const)('%s', (_name, create) => {
  it('holds the key with its token until the release, and refuses a second taker meanwhile', async () => {
    const adapter = await adapterOn(create);
    const held = await adapter.acquire('k', LIMITS);
    const token = await suite.admin.get('k');
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    expect(await suite.admin.pttl('k')).toBeGreaterThan(9_000);
    await expect(adapter.acquire('k', LIMITS)).rejects.toBeInstanceOf(AcquireTimeout);
    await held.release();
    expect(await suite.admin.exists('k')).toBe(0);
    const again = await adapter.acquire('k', LIMITS);
    await again.release();
  });

  it("does not delete a key that is not the caller's", async () => {
    const adapter = await adapterOn(create);
    const held = await adapter.acquire('k', LIMITS);
    await suite.admin.set('k', 'someone else');
    await held.release();
    expect(await suite.admin.get('k')).toBe('someone else');
  });
});

describe('fenced-floor, where script-floor does not look', () => {
  it.each([['rxjs-lock:line:{k}'], ['rxjs-lock:places:{k}'], ['rxjs-lock:fence:{k}']])('refuses a free key with %s beside it', async (beside) => {
    await suite.admin.set(beside, 'x');
    const fenced = await adapterOn(createFencedFloor);
    await expect(fenced.acquire('k', LIMITS)).rejects.toBeInstanceOf(AcquireTimeout);
    expect(await suite.admin.exists('k')).toBe(0);
    const plain = await adapterOn(createScriptFloor);
    await (await plain.acquire('k', LIMITS)).release();
  });

  it("deletes the key's places with it when no line is beside it, and the key alone when one is", async () => {
    const fenced = await adapterOn(createFencedFloor);
    const first = await fenced.acquire('k', LIMITS);
    await suite.admin.set('rxjs-lock:places:{k}', 'grant record');
    await first.release();
    expect(await suite.admin.exists('k', 'rxjs-lock:places:{k}')).toBe(0);

    const second = await fenced.acquire('k', LIMITS);
    await suite.admin.set('rxjs-lock:line:{k}', 'x');
    await suite.admin.set('rxjs-lock:places:{k}', 'x');
    await second.release();
    expect(await suite.admin.exists('k')).toBe(0);
    expect(await suite.admin.exists('rxjs-lock:places:{k}')).toBe(1);
  });
});
