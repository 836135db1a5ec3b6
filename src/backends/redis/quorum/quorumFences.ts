/**
 * Fencing tokens of a quorum grant. One node's fence is not a safe token across nodes: the next
 * quorum may not include that node, and another node's counter and clock know nothing of it. So a
 * quorum grant's fences are derived from a quorum of its winners — the `quorum` winners with the
 * lowest first fences: the highest first fence among them, and the smallest block among them — and,
 * before the grant is answered, the winners' fence records are raised to the block's last fence
 * (../protocol/lua/raiseFence-1.lua); the grant holds only if a quorum of nodes took the raise.
 *
 * Why that is enough: any two quorums of the nodes share a node. The winners chosen are a quorum,
 * so they share a node with the quorum that took the previous grant's raise, and that node's next
 * grant starts above the record (or above its clock, once the clock has passed the record): the
 * highest first fence among the chosen winners is above the previous block. Fences strictly
 * increase across grants, whichever nodes make them.
 *
 * Why the lowest quorum and not every winner: a minority of nodes whose fences stand far ahead
 * (a clock far ahead, or a stray record) would otherwise set the block, and the other nodes would
 * refuse to raise their records that far (more than 60 s ahead of their clocks): no grant at all,
 * for as long as that minority stays ahead. Taken from the lowest quorum, the block follows the
 * nodes whose clocks agree, and the nodes ahead take the raise as it is (their records are above it).
 *
 * Assumptions (docs/redlock.md): no node's clock steps back; and a node that restarts without its
 * data stays down longer than the nodes' clocks differ (its seed must pass the fences that other
 * nodes' clocks issued before it returns).
 */

/** One winning node's own grant: its first fence and how many it reserved. */
export interface NodeGrant {
  readonly fence: number;
  readonly fences: number;
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
