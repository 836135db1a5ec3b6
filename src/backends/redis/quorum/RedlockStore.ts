/**
 * The quorum store (Redlock): a lock held on a majority of independent Redis masters, so it
 * survives the loss of a minority of them. It implements the core store contract (no line: the
 * engine polls it with back-off and adds the local gate, renewal and loss detection on top), and
 * hints a waiter when a busy key is given back (wake-up without a line). Each node is a
 * single-node RedisLockStore used through its core operations.
 */
import { LockOptionsError, QuorumUnreachableError, type FailedNode, type StoreOperation } from '../../../errors/errors.js';
import { fenceCountError, isFenceCount, isStoreTtl, storeTtlError } from '../../../options/storeArguments.js';
import type { KeyCheckingStore, ClosableStore } from '../../../store/capabilities.js';
import type { AcquireResult, ExtendOutcome, LockStore, NotAcquired, ReleasedGrant } from '../../../store/LockStore.js';
import { driftOf, quorumOf, validityOf } from './quorum.js';
import { FenceFloor } from './FenceFloor.js';
import { covers, quorumFences, type NodeGrant, type QuorumFenceBlock } from './quorumFences.js';
import { QuorumNode, type NodeAcquire, type QuorumClient } from './QuorumNode.js';
import { decided, round, tally, type NodeReply } from './round.js';
import { resolveRedlockOptions, type RedlockSettings, type RedlockStoreOptions } from './RedlockStoreOptions.js';
import { v4 as uuidv4 } from 'uuid';
import type { StoreWatch, WakeSignal } from '../../../store/capabilities.js';
import type { RedisSubscriber } from '../RedisClient.js';
import { INBOX_PREFIX } from '../RedisLockStore.js';
import { WakeInbox, type InboxListener } from '../WakeInbox.js';

/** How long a node's hint connection stays open after the last wait (ms), as the Redis store's default. */
const HINT_LINGER_MS = 2_000;

/**
 * A lock store over N independent Redis masters (Redlock): a key is held when a majority
 * (⌊N/2⌋+1) of them hold it for the same token, so the lock survives the crash of a minority.
 * Use it where a lock must outlive a Redis node; a single {@link RedisLockStore} is faster, fairer
 * under contention (its line hands the key over in arrival order) and enough when its Redis is as
 * available as the data the lock protects. See docs/redlock.md.
 *
 * **Acquire.** One attempt sends the grant to every node at once, each call bounded by
 * `nodeTimeout`. It holds when a quorum granted it (a node that finds our token already there — an
 * attempt whose release did not reach it — counts) and its validity `ttl − elapsed − drift`
 * (`drift = ttl × driftFactor + drift`) is still positive, `elapsed` counted from the start of this
 * attempt (redlock 5 counts from its first attempt, so a lock won after contention looked nearly
 * expired). The validity is answered as `Acquired.validity`, which the locker takes as the lease's
 * deadline. A failed attempt gives the key back on every node that granted it or did not answer
 * (bounded by `nodeTimeout`) before it returns.
 *
 * **Busy is not down.** When a quorum of nodes answered and no quorum granted the key (someone
 * else holds it, or the vote split), the answer is "not acquired": the locker keeps waiting, and
 * ends with `LockTimeoutError` (a grant answers `waiting: 1` when a node refused the key to another
 * token within 100 ms, and the locker then lets the others' polls come first when it gives the key
 * back; with `wakeUp`, the default, each node's release hints the acquisition it refused last, which
 * then asks at once instead of at the end of its back-off step). When fewer than a quorum answered, the call rejects with
 * {@link QuorumUnreachableError}, which names each failed node and why (the locker's stream gets it
 * as the `cause` of its `LockStoreError`).
 *
 * **Fences.** A single node's fence is not safe across nodes. A grant's fences are the highest
 * first fence and the smallest block among the quorum of its winners with the lowest first fences
 * (so a minority of nodes whose clocks run far ahead neither sets nor blocks them), and the grant
 * holds only once a quorum of nodes make sure their next grants start above its block. The acquire
 * sends each node a fence floor (FenceFloor.ts: the clocks learnt from earlier grants, plus 2 ms);
 * nodes start their blocks there and record them, so usually the winners answer the same block and
 * that is all. When they disagree, a second round raises the record of each winner that does not
 * cover the block yet (one more round trip); a node more than 60 s behind the fence refuses it.
 * Any later quorum shares a node with that quorum, so fences strictly increase across grants —
 * provided no node's clock steps back, and a node restarted without its data stays down longer than
 * the nodes' clocks differ plus 2 ms (docs/redlock.md, quorumFences.ts).
 *
 * **Extend** needs a quorum of nodes to extend (and validity left); otherwise it answers `'taken'`
 * if a node has another holder, else `'gone'`, or rejects with the quorum error when fewer than a
 * quorum answered. **Release** goes to every node and never rejects.
 *
 * What it does not promise: safety when a holder pauses longer than its validity (use the fences),
 * or when clocks jump; see docs/redlock.md.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { lastValueFrom, of } from 'rxjs';
 * import { createLocker } from 'rxjs-lock';
 * import { RedlockStore } from 'rxjs-lock/redis';
 *
 * const nodes = [6380, 6381, 6382].map((port) => new Redis(port, '127.0.0.1'));
 * const locker = createLocker({ store: new RedlockStore(nodes), ttl: 10_000 });
 * await lastValueFrom(of('work').pipe(locker.withLock('report')));
 * // on shutdown:
 * await locker.close();
 * await Promise.all(nodes.map((node) => node.quit()));
 * ```
 */
export class RedlockStore implements LockStore, KeyCheckingStore, ClosableStore {
  private readonly nodes: readonly QuorumNode[];
  private readonly quorum: number;
  private readonly settings: RedlockSettings;
  private readonly floor: FenceFloor;
  /** This store's channel for hints that a key is free ('' with `wakeUp` off), and its subscription on each node. */
  private readonly inbox: string;
  private readonly inboxes: readonly WakeInbox[];

  /**
   * @param clients One ioredis `Redis` client per independent Redis master (not a `Cluster`, and
   * no two of one server); yours to close. The store registers its scripts on each.
   * @param options See {@link RedlockStoreOptions}.
   */
  constructor(clients: readonly QuorumClient[], options?: RedlockStoreOptions) {
    if (!Array.isArray(clients) || clients.length === 0) {
      throw new LockOptionsError('clients', 'a non-empty array of ioredis Redis clients, one per independent Redis master', clients);
    }
    this.settings = resolveRedlockOptions(options);
    const nodes: QuorumNode[] = [];
    try {
      clients.forEach((client, i) => nodes.push(nodeOf(clients, nodes, client, i, this.settings)));
    } catch (error) {
      // (the nodes made so far listen to their clients' errors)
      for (const node of nodes) node.close();
      throw error;
    }
    this.nodes = nodes;
    this.quorum = quorumOf(nodes.length);
    this.floor = new FenceFloor(nodes.length, this.quorum);
    const hinting = this.settings.wakeUp ? nodes.filter(({ client }) => typeof client.duplicate === 'function') : [];
    this.inbox = hinting.length === 0 ? '' : INBOX_PREFIX + uuidv4();
    this.inboxes = hinting.map(({ client }) => {
      const duplicate = client.duplicate!.bind(client) as (override?: { autoResubscribe: boolean }) => RedisSubscriber;
      return new WakeInbox(this.inbox, () => duplicate({ autoResubscribe: false }), HINT_LINGER_MS, true);
    });
  }

  /**
   * Hints to `token` that `key` may be free (`WakeSignal` `'freed'`), from any node, until the
   * watch is stopped: the store's `WakeUpStore` capability without a line (absent with `wakeUp`
   * off). `active` while the channel is subscribed on at least one node.
   */
  get watch(): ((key: string, token: string, listener: (signal: WakeSignal) => void) => StoreWatch) | undefined {
    if (this.inboxes.length === 0) return undefined;
    return (_key, token, listener) => {
      const hint = `freed ${token}`;
      const onNode: InboxListener = {
        message: (message) => {
          if (message === hint) listener({ type: 'freed', token });
        },
        status: () => undefined, // polling goes on either way
      };
      const watches = this.inboxes.map((inbox) => inbox.watch(token, onNode));
      return {
        get active() {
          return watches.some((watch) => watch.active);
        },
        // (raced when asked only: the engine never asks, and a race over a node's pending
        // subscription, while that node is down, would keep a reaction per wait)
        get ready() {
          return Promise.race(watches.map((watch) => watch.ready));
        },
        stop: () => {
          for (const watch of watches) watch.stop();
        },
      };
    };
  }

  async tryAcquire(key: string, token: string, ttlMs: number, fences = 1): Promise<AcquireResult> {
    this.checkKey(key);
    if (!isStoreTtl(ttlMs)) throw storeTtlError(ttlMs);
    if (!isFenceCount(fences)) throw fenceCountError(fences);
    const start = performance.now();
    const quorum = this.quorum;
    const floor = this.floor.at(start);
    const replies = await round(
      this.nodes,
      this.settings.nodeTimeout,
      (node) =>
        node.acquire(key, token, ttlMs, fences, floor, this.inbox).then((answer) => {
          if (answer.acquired) this.floor.learn(node.index, answer.seed, start);
          return answer;
        }),
      (rs) => decided(tally(rs, granted), quorum),
    );
    let votes = votesOf(replies);
    if (votes.winners.length >= quorum) {
      let block = quorumFences(votes.winners, quorum);
      let secured = await this.secure(key, votes.winners, block);
      if (secured.on < quorum) {
        // The round was decided on the first winners to answer. If a minority of them has fences
        // far ahead (a clock far ahead), the others refused to raise their records that far; with
        // the winners that answer later, a quorum of winners whose fences agree may be there (the
        // wait is bounded by nodeTimeout, and paid only when the raise failed).
        const before = votes.winners.length;
        await Promise.all(replies.map(({ settled }) => settled));
        votes = votesOf(replies);
        const lower = quorumFences(votes.winners, quorum);
        if (lower.last < block.last || votes.winners.length > before) {
          block = lower;
          secured = await this.secure(key, votes.winners, block);
        }
      }
      const { winners, refused } = votes;
      if (secured.on >= quorum) {
        // A winner that found our token already there (an earlier attempt's key that its release
        // did not reach) has only what is left of that key's TTL: the lock lasts as long as the
        // quorum-th longest of the winners' keys.
        const ttls = winners.map(({ ttl }) => Math.min(ttl, ttlMs)).sort((a, b) => b - a);
        const ttl = ttls[quorum - 1]!;
        const validity = ttl - (performance.now() - start) - driftOf(ttlMs, this.settings);
        if (validity > 0) {
          return {
            acquired: true,
            fence: block.fence,
            ...(block.fences === fences ? {} : { fences: block.fences }),
            ...(ttl === ttlMs ? {} : { ttl }),
            // (no line: a winner says when other tokens were refused the key lately)
            ...(winners.some((winner) => winner.othersRefused) ? { waiting: 1 } : {}),
            validity,
          };
        }
      }
      await this.giveBack(key, token, replies);
      // The raise failed on so many winners that a quorum of all nodes no longer gave an answer.
      if (refused + secured.on < quorum)
        throw this.unreachable(key, 'acquire', [...failures(replies, true), ...failures(secured.raised)], refused + secured.on);
      return notAcquired(votes.holderTtl);
    }
    await this.giveBack(key, token, replies);
    if (votes.winners.length + votes.refused < quorum) throw this.unreachable(key, 'acquire', failures(replies), votes.winners.length + votes.refused);
    return notAcquired(votes.holderTtl);
  }

  async extend(key: string, token: string, ttlMs: number): Promise<ExtendOutcome> {
    if (!isStoreTtl(ttlMs)) throw storeTtlError(ttlMs);
    const start = performance.now();
    const quorum = this.quorum;
    const replies = await round(
      this.nodes,
      this.settings.nodeTimeout,
      (node) => node.store.extend(key, token, ttlMs),
      (rs) => decided(tally(rs, isExtended), quorum),
    );
    const { yes, answered } = tally(replies, isExtended);
    if (yes >= quorum && validityOf(ttlMs, performance.now() - start, this.settings) > 0) return 'extended';
    if (answered < quorum) throw this.unreachable(key, 'extend', failures(replies), answered);
    return replies.some(({ answer }) => answer?.ok === true && answer.value === 'taken') ? 'taken' : 'gone';
  }

  /**
   * Gives the key up on every node, each call bounded by `nodeTimeout`, and resolves once a quorum
   * of nodes answered (then no quorum holds the key any more) or every call ended: a dead node
   * costs no waiting. Never rejects: a node that fails keeps the key until its TTL. Resolves `true`
   * when a node that answered had it for `token`.
   */
  async release(key: string, token: string, grant?: ReleasedGrant): Promise<boolean> {
    const quorum = this.quorum;
    const replies = await round(
      this.nodes,
      this.settings.nodeTimeout,
      (node) => node.release(key, token, grant),
      (rs) => {
        const { answered, pending } = tally(rs, Boolean);
        return answered >= quorum || pending === 0;
      },
    );
    return tally(replies, Boolean).yes > 0;
  }

  /** Throws `LockOptionsError` for a key that one of the nodes cannot keep (see RedisLockStore). */
  checkKey(key: string): void {
    for (const node of this.nodes) node.store.checkKey(key);
  }

  /** Stops listening to the clients' connection errors and closes the store's own hint connections; the clients are yours to close. */
  close(): void {
    for (const node of this.nodes) node.close();
    for (const inbox of this.inboxes) inbox.close();
  }

  /**
   * Makes sure a quorum of nodes start their next grants above `block` (see quorumFences.ts): the
   * winners that cover it already, and the others raised (a second round, decided once enough of
   * them took it or no quorum can). `on`: on how many nodes it is sure.
   */
  private async secure(key: string, winners: readonly Winner[], block: QuorumFenceBlock): Promise<{ on: number; raised: Array<NodeReply<unknown>> }> {
    const behind = winners.filter((winner) => !covers(winner, block));
    const covered = winners.length - behind.length;
    const needed = this.quorum - covered;
    if (needed <= 0) return { on: covered, raised: [] };
    const raised = await round(
      behind.map(({ node }) => node),
      this.settings.nodeTimeout,
      (node) => node.raiseFence(key, block.last),
      (rs) =>
        decided(
          tally(rs, () => true),
          needed,
        ),
    );
    return { on: covered + tally(raised, () => true).yes, raised };
  }

  /**
   * A failed attempt gives the key back on every node that granted it, or that may have (it did
   * not answer: its grant may still come, and the release, sent on the same connection, follows
   * it). A node that refused holds nothing of ours. Bounded by `nodeTimeout`; never rejects.
   */
  private async giveBack(key: string, token: string, replies: ReadonlyArray<NodeReply<NodeAcquire>>): Promise<void> {
    await Promise.all(
      replies.map(({ node, answer, answeredAt }) => {
        if (answer?.ok === true && !answer.value.acquired) return undefined;
        const grant = answer?.ok === true && answer.value.acquired ? { fence: answer.value.fence, fences: answer.value.fences, answeredAt } : undefined;
        return node.call(() => node.release(key, token, grant));
      }),
    );
  }

  private unreachable(key: string, operation: StoreOperation, failed: readonly FailedNode[], answered: number): QuorumUnreachableError {
    return new QuorumUnreachableError(key, operation, failed, answered, this.quorum);
  }
}

/** The node of `clients[i]`, checked against the nodes made before it. */
function nodeOf(clients: readonly QuorumClient[], before: readonly QuorumNode[], client: QuorumClient, i: number, settings: RedlockSettings): QuorumNode {
  if (typeof client !== 'object' || client === null || typeof client.defineCommand !== 'function') {
    throw new LockOptionsError(`clients[${i}]`, 'an ioredis Redis client', client);
  }
  const same = clients.indexOf(client);
  if (same !== i) throw new LockOptionsError(`clients[${i}]`, `a client of another Redis server than clients[${same}] (the same client twice)`, client);
  const node = new QuorumNode(client, settings.nodeTimeout, i, settings.coalesceWrites);
  const twin = before.findIndex((other) => other.name === node.name);
  if (twin >= 0) {
    node.close();
    throw new LockOptionsError(
      `clients[${i}]`,
      `a client of another Redis server than clients[${twin}] (both ${node.name}: one server's databases are not independent nodes)`,
      client,
    );
  }
  return node;
}

/** The nodes of a round that failed, and why (and those still out, when `pending`). */
function failures(replies: ReadonlyArray<NodeReply<unknown>>, pending = false): FailedNode[] {
  const failed: FailedNode[] = [];
  for (const { node, answer } of replies) {
    if (answer === undefined) {
      if (pending) failed.push({ node: node.name, reason: 'had not answered when a quorum of the others had' });
    } else if (!answer.ok) failed.push({ node: node.name, reason: answer.reason });
  }
  return failed;
}

/** A node that granted the key in an acquire round, and its grant. */
interface Winner extends NodeGrant {
  readonly node: QuorumNode;
  /** What the node's key has left (ms). */
  readonly ttl: number;
  /** The node refused the key to another token lately. */
  readonly othersRefused: boolean;
}

/** An acquire round's answers so far: who granted, how many refused, the shortest holder TTL heard. */
function votesOf(replies: ReadonlyArray<NodeReply<NodeAcquire>>): { winners: Winner[]; refused: number; holderTtl: number } {
  const winners: Winner[] = [];
  let refused = 0;
  let holderTtl = Infinity;
  for (const { node, answer } of replies) {
    if (answer === undefined || !answer.ok) continue;
    if (answer.value.acquired) {
      const { fence, fences, seed, ttl, othersRefused } = answer.value;
      winners.push({ node, fence, fences, seed, ttl, othersRefused: othersRefused === true });
    } else {
      refused++;
      if (answer.value.holderTtl !== undefined) holderTtl = Math.min(holderTtl, answer.value.holderTtl);
    }
  }
  return { winners, refused, holderTtl };
}

const granted = (result: NodeAcquire): boolean => result.acquired;
const isExtended = (outcome: ExtendOutcome): boolean => outcome === 'extended';

function notAcquired(holderTtl: number): NotAcquired {
  return holderTtl === Infinity ? { acquired: false } : { acquired: false, holderTtl };
}
