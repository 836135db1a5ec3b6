/**
 * What the Redis store tells its release script of the grant it gives up (protocol/codec.ts): the
 * block's last fence while the server's clock may not have passed it, 'passed' once more time went
 * by since the grant's answer than the block spans on that clock (4 fences a µs) plus a margin —
 * then the script reads no clock and records nothing — and nothing when the grant is not known or
 * not well-formed (the script then assumes the most a grant reserves). A unit test: the Redis tests
 * (fenceClock.test.ts, attackFenceRecord.test.ts) show what the script does with each.
 */
import { describe, expect, it } from 'vitest';
import { CLOCK_MARGIN_US, FENCES_PER_MICROSECOND, passedAfterUs, releaseArgs } from '../../src/backends/redis/protocol/codec.js';

describe('releaseArgs', () => {
  const grant = (fences: number, answeredAt = 1000) => ({ fence: 5_000, fences, answeredAt });
  /** `performance.now()` µs after the answer. */
  const answeredPlus = (us: number, answeredAt = 1000) => answeredAt + us / 1000;

  it('says the last fence until the block has surely passed on the server clock, then says passed', () => {
    for (const fences of [1, 3, 4, 5, 16, 1024]) {
      const span = passedAfterUs(fences);
      expect(releaseArgs('t', grant(fences), answeredPlus(span - 1))).toEqual(['t', 5_000 + fences - 1]);
      expect(releaseArgs('t', grant(fences), answeredPlus(span + 0.01))).toEqual(['t', 'passed']);
      expect(releaseArgs('t', grant(fences), answeredPlus(10_000_000))).toEqual(['t', 'passed']);
    }
    // exactly at the span (4 fences: 1 µs + the margin), the block counts as passed
    expect(releaseArgs('t', grant(4, 0), (1 + CLOCK_MARGIN_US) / 1000)).toEqual(['t', 'passed']);
    // a block spans whole µs of the clock (TIME has 1 µs resolution): 1 to 4 fences alike, 5 one more
    expect(passedAfterUs(1)).toBe(passedAfterUs(4));
    expect(passedAfterUs(5)).toBe(passedAfterUs(4) + 1);
    // fence 0 is a fence (a store may start there)
    expect(releaseArgs('t', { fence: 0, fences: 2, answeredAt: 0 }, 0)).toEqual(['t', 1]);
    // a release at the very moment of the answer (or a clock read before it) says the end
    expect(releaseArgs('t', grant(16), answeredPlus(0))).toEqual(['t', 5_015]);
    expect(releaseArgs('t', grant(16), answeredPlus(-5))).toEqual(['t', 5_015]);
  });

  it('says nothing of a grant that is not known or not well-formed', () => {
    expect(releaseArgs('t', undefined, 5)).toEqual(['t']);
    // an answer time that is no time: the block is not known to be passed
    for (const answeredAt of [Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY])
      expect(releaseArgs('t', grant(16, answeredAt), 1e9)).toEqual(['t', 5_015]);
    for (const bad of [
      { fence: Number.NaN, fences: 1, answeredAt: 0 },
      { fence: -1, fences: 1, answeredAt: 0 },
      { fence: 1, fences: 0, answeredAt: 0 },
      { fence: Number.MAX_SAFE_INTEGER, fences: 2, answeredAt: 0 },
      { fence: 1.5, fences: 1, answeredAt: 0 },
    ])
      expect(releaseArgs('t', bad, 1e9), JSON.stringify(bad)).toEqual(['t']);
  });

  it('keeps a margin over the bound (⌈fences / 4⌉ µs) far above what two clocks drift apart over a block (NTP slews by at most 500 ppm: 0.13 µs over 256 µs)', () => {
    expect(CLOCK_MARGIN_US).toBeGreaterThanOrEqual(1);
    for (const fences of [1, 16, 1024]) expect(passedAfterUs(fences)).toBeGreaterThanOrEqual(Math.ceil(fences / 4) + 1);
    expect(FENCES_PER_MICROSECOND).toBe(4); // lua/lib/clock.lua: the seed grows by 4 a µs
  });
});
