/**
 * Which requests go to the same Redis Cluster node: grouped by the nodes serving their keys' hash
 * slots, exactly as ioredis requires of one Cluster pipeline (every key's slot served by the same
 * set of nodes), so a batch of renewals costs one round trip per node instead of one per lease.
 */
/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from 'cluster-key-slot';

/**
 * Groups `items` by the nodes that serve the slot of `keyOf(item)` (with the client's key prefix,
 * as Redis sees the key) in `slots` (an ioredis Cluster's slot table), keeping their indexes.
 * Items whose slot the table does not know yet form groups of one.
 */
export function groupByNode<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  slots: ReadonlyArray<readonly string[] | undefined>,
  clientPrefix: string,
): Array<Array<{ item: T; index: number }>> {
  const groups = new Map<string, Array<{ item: T; index: number }>>();
  const alone: Array<Array<{ item: T; index: number }>> = [];
  items.forEach((item, index) => {
    const nodes = slots[calculateSlot(clientPrefix + keyOf(item))];
    if (nodes === undefined || nodes.length === 0) {
      alone.push([{ item, index }]);
      return;
    }
    const id = nodes.join(';');
    const group = groups.get(id);
    if (group === undefined) groups.set(id, [{ item, index }]);
    else group.push({ item, index });
  });
  return [...groups.values(), ...alone];
}
