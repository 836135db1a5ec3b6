/**
 * The fence floor a quorum store sends with each acquire: its estimate of the highest fence seed
 * (lua/lib/clock.lua) among the quorum of nodes whose clocks are lowest, at the moment the nodes
 * will read their clocks, plus a margin. A node starts its block at the floor when the floor is
 * above its own clock and record, and records it (lua/quorumAcquire-4.lua): when the quorum of
 * winners all answer the floor's block, each has already made sure its next grant starts above it,
 * and the grant needs no raise round (see quorumFences.ts). A floor that is too low (a node read its
 * clock later than expected, or holds a record above it) only costs that raise round; one that is
 * too high only makes the fences lead the nodes' clocks further, which the margin bounds.
 *
 * What it learns: every grant answers the node's seed. The seed was read after the call was sent,
 * so `seed − 4000 × sentAt` (sentAt on this process's monotonic clock, in ms) is an upper bound of
 * that node's clock offset, loose by how long the call took to reach the node. The latest one is
 * kept (clock rates drift apart; a stale bound could fall short or stand too far ahead).
 */

/** Fence seeds per ms (lua/lib/clock.lua: 4 per µs). */
const SEEDS_PER_MS = 4_000;

/**
 * How far above the estimate the floor stands, in ms: covers a call that reaches its node later
 * than the call its node's estimate was learnt from (the event loop, the network, a busy Redis),
 * and is how far a grant's fences may lead the nodes' clocks (docs/redlock.md: a node restarted
 * empty must stay down longer than that plus the clocks' difference).
 */
export const FLOOR_MARGIN_MS = 2;

export class FenceFloor {
  /** Per node: the latest upper bound of its seed's offset from `SEEDS_PER_MS × performance.now()`. */
  private readonly leads: number[];

  /** For `nodes` nodes, of which `quorum` decide. */
  constructor(
    nodes: number,
    private readonly quorum: number,
  ) {
    this.leads = new Array<number>(nodes).fill(Number.NaN);
  }

  /**
   * The floor for an acquire sent at `sentAt` (`performance.now()`): above the estimated seeds of
   * the `quorum` nodes whose clocks are lowest (a minority far ahead answers its own fences, which
   * the quorum's block leaves out), by the margin. 0 (no floor) until a quorum of nodes answered a
   * grant.
   */
  at(sentAt: number): number {
    const known = this.leads.filter((lead) => !Number.isNaN(lead));
    if (known.length < this.quorum) return 0;
    known.sort((a, b) => a - b);
    return Math.ceil(known[this.quorum - 1]! + (sentAt + FLOOR_MARGIN_MS) * SEEDS_PER_MS);
  }

  /** Learns node `index`'s offset from the seed it answered to a call sent at `sentAt`. */
  learn(index: number, seed: number, sentAt: number): void {
    this.leads[index] = seed - sentAt * SEEDS_PER_MS;
  }
}
