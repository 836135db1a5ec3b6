/**
 * One round of a quorum store: the same call sent to every node at once, each bounded by the
 * per-node timeout (one timer for the round), that ends as soon as its outcome is known — a quorum agreed, or no quorum can
 * any more — so a slow or dead minority of nodes costs no waiting once the rest decided. Calls
 * still out go on in the background (each ends by its own timeout) and fill in their replies as
 * they come: a failed acquisition gives the key back on the nodes that have not answered too.
 */
import { afterTimeout, type NodeAnswer, type QuorumNode } from './QuorumNode.js';

/** A node's reply in a round: `answer` is undefined while the call is still out. */
export interface NodeReply<T> {
  readonly node: QuorumNode;
  answer: NodeAnswer<T> | undefined;
  /** `performance.now()` when the answer came. */
  answeredAt: number;
  /** Settles once `answer` is filled in (the node's call ended, by its answer or its timeout). */
  readonly settled: Promise<void>;
}

/** How a round stands: nodes that answered `yes`, that answered otherwise, that failed, still out. */
export interface Tally {
  readonly yes: number;
  readonly answered: number;
  readonly pending: number;
}

/** Counts the replies; `yes` says which answers agree. */
export function tally<T>(replies: ReadonlyArray<NodeReply<T>>, yes: (value: T) => boolean): Tally {
  let agreed = 0;
  let answered = 0;
  let pending = 0;
  for (const { answer } of replies) {
    if (answer === undefined) pending++;
    else if (answer.ok) {
      answered++;
      if (yes(answer.value)) agreed++;
    }
  }
  return { yes: agreed, answered, pending };
}

/**
 * Is the round decided for a quorum of `quorum`? Yes when that many agreed, when every node has
 * replied, or when no quorum can agree any more and a quorum answered (so "no" is the nodes'
 * answer, not their silence).
 */
export function decided({ yes, answered, pending }: Tally, quorum: number): boolean {
  return yes >= quorum || pending === 0 || (yes + pending < quorum && answered >= quorum);
}

/**
 * Sends `run` to every node; resolves with the replies once `done` says the round is decided. One
 * timer bounds every call of the round by the per-node timeout (a call still out then is answered
 * as silent); it is cleared once every node answered.
 */
export function round<T>(
  nodes: readonly QuorumNode[],
  timeoutMs: number,
  run: (node: QuorumNode) => Promise<T>,
  done: (replies: ReadonlyArray<NodeReply<T>>) => boolean,
): Promise<Array<NodeReply<T>>> {
  if (nodes.length === 0) return Promise.resolve([]);
  return new Promise((resolve) => {
    let resolved = false;
    let out = nodes.length;
    const settlers: Array<() => void> = [];
    const fill = (reply: { answer: NodeAnswer<T> | undefined; answeredAt: number }, answer: NodeAnswer<T>, i: number): void => {
      if (reply.answer !== undefined) return;
      reply.answer = answer;
      reply.answeredAt = performance.now();
      if (--out === 0) clearTimeout(timer);
      settlers[i]!();
      if (!resolved && done(replies)) {
        resolved = true;
        resolve(replies);
      }
    };
    const replies: Array<NodeReply<T>> = nodes.map((node, i) => {
      const reply: { node: QuorumNode; answer: NodeAnswer<T> | undefined; answeredAt: number; settled: Promise<void> } = {
        node,
        answer: undefined,
        answeredAt: Number.NaN,
        settled: new Promise<void>((settle) => {
          settlers[i] = settle;
        }),
      };
      return reply;
    });
    const timer = afterTimeout(timeoutMs, () => {
      replies.forEach((reply, i) => fill(reply, reply.node.silence(), i));
    });
    // (answer() never rejects)
    replies.forEach((reply, i) => {
      void reply.node.answer(() => run(reply.node)).then((answer) => fill(reply, answer, i));
    });
  });
}
