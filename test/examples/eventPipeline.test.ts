/**
 * examples/event-pipeline, run by the suite: three consumer processes in one consumer group of a
 * Redis Stream on a private server; one is SIGKILLed mid-run with messages pending; the others
 * claim them (XAUTOCLAIM) and finish. Every balance must be exactly the sum of its updates, and
 * every message applied exactly once (the applied log holds each id once).
 */
import { describe, expect, it } from 'vitest';
import { runEventPipeline } from '../../examples/event-pipeline/pipeline.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();

describe('examples/event-pipeline', () => {
  it("three consumers, one killed mid-run: exact balances, each message applied once, the killed one's messages redelivered", async () => {
    const report = await runEventPipeline({
      host: suite.server.host,
      port: suite.server.port,
      consumers: 3,
      messages: 300,
      accounts: 5,
      killAfterApplied: 30,
      timeoutMs: 25_000,
    });
    expect(report.balances).toEqual(report.expected);
    expect(Object.keys(report.expected)).toHaveLength(5);
    expect(report.applied).toBe(300);
    expect(report.distinctApplied).toBe(300);
    // The killed consumer had read messages it never acknowledged; the survivors took them over.
    expect(report.pendingOnKilled).toBeGreaterThan(0);
    expect(report.claimed).toBeGreaterThanOrEqual(report.pendingOnKilled);
    // The survivors closed their clients and exited by themselves.
    expect(report.exitCodes).toEqual([0, 0]);
    expect(await suite.admin.xpending('events', 'balances')).toEqual([0, null, null, null]);
  }, 40_000);

  it('the same run with locks that do not span processes (in-memory, as the free withLock before setDefaultLocker) fails the check', async () => {
    // 20 ms between read and write: three consumers on five accounts meet on an account all the time.
    const report = await runEventPipeline({
      host: suite.server.host,
      port: suite.server.port,
      consumers: 3,
      messages: 300,
      accounts: 5,
      killAfterApplied: 30,
      workMs: 20,
      inMemoryLocks: true,
      timeoutMs: 25_000,
    });
    const exact = Object.keys(report.expected).every((account) => report.balances[account] === report.expected[account]);
    expect(exact && report.applied === report.messages).toBe(false);
  }, 40_000);
});
