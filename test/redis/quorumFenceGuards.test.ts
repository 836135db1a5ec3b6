/**
 * The pure guards of the quorum store's fences and node replies, pinned where mutation testing
 * (npm run mutation:quorum) found no test that tells them apart from a small change:
 * - quorumFences: the block's size is the smallest of the lowest quorum's blocks (not the last
 *   one looked at), so every winner of that quorum can reach the block's last fence;
 * - covers: the 60 s lead bound is inclusive, and a block recorded above the node's clock covers
 *   a quorum block that starts above its own first fence (no raise round needed);
 * - decodeNodeAcquire: the holder's TTL of a refusal (0 is a TTL, -1 none) and the "others were
 *   refused lately" flag (the locker's turn-taking).
 * Unit tests: redlockFenceFloor.test.ts shows what the nodes do with each on real Redis servers.
 */
import { describe, expect, it } from 'vitest';
import { decodeNodeAcquire } from '../../src/backends/redis/quorum/QuorumNode.js';
import { covers, MAX_LEAD, quorumFences } from '../../src/backends/redis/quorum/quorumFences.js';

describe('quorumFences', () => {
  it("takes the smallest block among the lowest quorum's grants, whichever order they are in", () => {
    const grants = [
      { fence: 10, fences: 4 },
      { fence: 12, fences: 2 },
      { fence: 11, fences: 8 },
      // far ahead: not one of the lowest quorum
      { fence: 1_000, fences: 1 },
    ];
    expect(quorumFences(grants, 3)).toEqual({ fence: 12, fences: 2, last: 13 });
    // the last grant looked at (the highest) has the biggest block: still the smallest is taken
    expect(quorumFences([grants[1]!, { fence: 11, fences: 1 }, { fence: 13, fences: 16 }], 3)).toEqual({ fence: 13, fences: 1, last: 13 });
  });
});

describe('covers', () => {
  const block = { fence: 1_000, fences: 3, last: 1_002 };

  it('a block exactly 60 s of seed ahead of the clock is still covered; one fence further is not', () => {
    expect(covers({ fence: 1_000, fences: 3, seed: 1_002 - MAX_LEAD }, block)).toBe(true);
    expect(covers({ fence: 1_000, fences: 3, seed: 1_002 - MAX_LEAD - 1 }, block)).toBe(false);
  });

  it('a block recorded above the clock (from the floor or a record) covers a quorum block that starts above its first fence', () => {
    // started at 995 > seed + 1 (recorded until the clock passes 1,004): covers 1,000 … 1,002
    expect(covers({ fence: 995, fences: 10, seed: 900 }, block)).toBe(true);
    // the same block started at the clock (seed 994): unrecorded, not covered
    expect(covers({ fence: 995, fences: 10, seed: 994 }, block)).toBe(false);
  });
});

describe('decodeNodeAcquire', () => {
  it("a refusal answers the holder's TTL, 0 included; none when the holder's key has no TTL", () => {
    expect(decodeNodeAcquire([0, 0], 10_000, 1, 0)).toEqual({ acquired: false, holderTtl: 0 });
    expect(decodeNodeAcquire([0, 250], 10_000, 1, 0)).toEqual({ acquired: false, holderTtl: 250 });
    expect(decodeNodeAcquire([0, -1], 10_000, 1, 0)).toEqual({ acquired: false });
  });

  it('a grant says that others were refused the key lately only when the node says so', () => {
    expect(decodeNodeAcquire([5, 2, 4, 9_000], 10_000, 2, 0)).toEqual({ acquired: true, fence: 5, fences: 2, seed: 4, ttl: 9_000 });
    expect(decodeNodeAcquire([5, 2, 4, 9_000, 1], 10_000, 2, 0)).toEqual({ acquired: true, fence: 5, fences: 2, seed: 4, ttl: 9_000, othersRefused: true });
    // a TTL the key no longer has is none left
    expect(decodeNodeAcquire([5, 2, 4, -2], 10_000, 2, 0)).toEqual({ acquired: true, fence: 5, fences: 2, seed: 4, ttl: 0 });
  });

  it('a bare integer: the seed when the block starts at the clock, minus the seed when it starts at the floor', () => {
    expect(decodeNodeAcquire(400, 10_000, 3, 0)).toEqual({ acquired: true, fence: 401, fences: 3, seed: 400, ttl: 10_000 });
    expect(decodeNodeAcquire(-400, 10_000, 3, 900)).toEqual({ acquired: true, fence: 900, fences: 3, seed: 400, ttl: 10_000 });
  });
});
