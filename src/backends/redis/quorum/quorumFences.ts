/**
 * Fencing tokens of a quorum grant. One node's fence is not a safe token across nodes: the next
 * quorum may not include that node, and another node's counter and clock know nothing of it. So a
 * quorum grant's fences are derived from a quorum of its winners — the `quorum` winners with the
 * lowest first fences: the highest first fence among them, and the smallest block among them — and
 * the grant holds only once a quorum of nodes make sure that their next grants start above the
 * block's last fence: a node whose own block already covers it ({@link covers}), or a winner whose
 * fence record was raised to it (../protocol/lua/raiseFence-1.lua, a second round).
 *
 * Why that is enough: any two quorums of the nodes share a node. The winners chosen are a quorum,
 * so they share a node with the quorum that made sure of the previous grant's block, and that
 * node's next grant starts above it (above its record, or above its clock once the clock has
 * passed the record): the highest first fence among the chosen winners is above the previous
 * block. Fences strictly increase across grants, whichever nodes make them.
 *
 * The common case needs no second round: the store sends every node a fence floor (FenceFloor.ts),
 * above the clocks of the lowest quorum of nodes; each of them starts its block at the floor and
 * records it (../protocol/lua/quorumAcquire-4.lua), so they all answer the same block, and each one
 * covers it. When they disagree (a floor too low, a record above it), the nodes that do not cover
 * the block are raised.
 *
 * Why the lowest quorum and not every winner: a minority of nodes whose fences stand far ahead
 * (a clock far ahead, or a stray record) would otherwise set the block, and the other nodes would
 * refuse to raise their records that far (more than 60 s ahead of their clocks): no grant at all,
 * for as long as that minority stays ahead. Taken from the lowest quorum, the block follows the
 * nodes whose clocks agree, and the nodes ahead cover it as they are (their blocks are above it).
 *
 * Assumptions (docs/redlock.md): no node's clock steps back; and a node that restarts without its
 * data stays down longer than the nodes' clocks differ, plus the floor's margin (its seed must pass
 * the fences that other nodes' clocks, or the floor, issued before it returns).
 */

/** Most a block may lead a node's clock, in fence seeds (60 s: as raiseFence-1.lua refuses). */
export const MAX_LEAD = 60_000 * 4_000;

/** One winning node's own grant: its first fence, how many it reserved, and its clock's seed then. */
export interface NodeGrant {
  readonly fence: number;
  readonly fences: number;
  /** The node's fence seed when it granted; unknown (a grant that covers nothing) when absent. */
  readonly seed?: number;
}

/** A quorum grant's fences: `fence … last`, `fences` of them. */
export interface QuorumFenceBlock {
  readonly fence: number;
  readonly fences: number;
  readonly last: number;
}

/** The quorum's block from its winners' grants (at least `quorum` of them). */
export function quorumFences(grants: readonly NodeGrant[], quorum: number): QuorumFenceBlock {
  const lowest = [...grants].sort((a, b) => a.fence - b.fence).slice(0, quorum);
  let fence = 0;
  let fences = Infinity;
  for (const grant of lowest) {
    if (grant.fence > fence) fence = grant.fence;
    if (grant.fences < fences) fences = grant.fences;
  }
  return { fence, fences, last: fence + fences - 1 };
}

/**
 * Does a node's own grant already make sure that its next grant starts above `block`, whatever
 * ends this one (a release, which may say the clock has passed the block, or the key's TTL)? Yes
 * when its block reaches the block's last fence, within 60 s of its clock, and either
 * - it started above the node's clock (from the floor or a record): the node recorded it until its
 *   clock passes it (quorumAcquire-4.lua); or
 * - it started at the clock, no lower than the block's first fence: unrecorded, but a release that
 *   says the block has passed comes when the node's clock has gone on by the block's span since it
 *   read `seed`, so past the block; a release that says the block's last fence records it; and the
 *   TTL (>= 1 ms) outlasts the MAX_BLOCK a block can lead the clock.
 */
export function covers(grant: NodeGrant, block: QuorumFenceBlock): boolean {
  const { fence, fences, seed } = grant;
  if (seed === undefined || fence + fences - 1 < block.last || block.last > seed + MAX_LEAD) return false;
  return fence > seed + 1 || fence >= block.fence;
}
