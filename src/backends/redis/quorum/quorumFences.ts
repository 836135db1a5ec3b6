/**
 * Fencing tokens of a quorum grant. One node's fence is not a safe token across nodes: the next
 * quorum may not include that node, and another node's counter and clock know nothing of it. So a
 * quorum grant's fences are derived from all its winners — the highest first fence, and the
 * smallest block — and, before the grant is answered, each winner's fence record is raised to the
 * block's last fence (../protocol/lua/raiseFence-1.lua). Any later quorum shares at least one node
 * with the quorum that took the raise, and that node's next grant starts above the record (or
 * above its clock, once the clock has passed the record), so the later quorum's highest first fence
 * is above this block: fences strictly increase across grants, whichever nodes make them.
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

/** The quorum's block from its winners' grants (at least one). */
export function quorumFences(grants: readonly NodeGrant[]): QuorumFenceBlock {
  let fence = 0;
  let fences = Infinity;
  for (const grant of grants) {
    if (grant.fence > fence) fence = grant.fence;
    if (grant.fences < fences) fences = grant.fences;
  }
  return { fence, fences, last: fence + fences - 1 };
}
