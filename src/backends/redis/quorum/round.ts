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
  readonly answer: NodeAnswer<T> | undefined;
  /** `performance.now()` when the answer came. */
  readonly answeredAt: number;
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
    new Round(nodes, timeoutMs, run, done, resolve);
  });
}

/** One round in progress: its replies, what is still out, and its timer. */
class Round<T> {
  readonly replies: Array<Reply<T>>;
  private out: number;
  private resolved = false;
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(
    nodes: readonly QuorumNode[],
    timeoutMs: number,
    run: (node: QuorumNode) => Promise<T>,
    private readonly done: (replies: ReadonlyArray<NodeReply<T>>) => boolean,
    private readonly resolve: (replies: Array<NodeReply<T>>) => void,
  ) {
    this.out = nodes.length;
    this.replies = nodes.map((node) => new Reply<T>(node, this));
    this.timer = afterTimeout(timeoutMs, () => {
      for (const reply of this.replies) reply.fill(reply.node.silence());
    });
    for (const reply of this.replies) {
      let call: Promise<T>;
      try {
        call = run(reply.node);
      } catch (error) {
        call = Promise.reject(error);
      }
      call.then(
        (value) => reply.fill({ ok: true, value }),
        (error: unknown) => reply.fill(reply.node.failure(error)),
      );
    }
  }

  /** A reply was filled in: decides the round when it can. */
  filled(): void {
    if (--this.out === 0) clearTimeout(this.timer);
    if (!this.resolved && this.done(this.replies)) {
      this.resolved = true;
      this.resolve(this.replies);
    }
  }
}

/** A node's reply: filled in once, by the node's answer or the round's timer. */
class Reply<T> implements NodeReply<T> {
  answer: NodeAnswer<T> | undefined = undefined;
  answeredAt = Number.NaN;
  /** Who waits for `settled` (made only when someone asks: the common path never does). */
  private waiting: Array<() => void> | undefined;

  constructor(
    readonly node: QuorumNode,
    private readonly round: Round<T>,
  ) {}

  get settled(): Promise<void> {
    if (this.answer !== undefined) return Promise.resolve();
    return new Promise((settle) => {
      (this.waiting ??= []).push(settle);
    });
  }

  fill(answer: NodeAnswer<T>): void {
    if (this.answer !== undefined) return;
    this.answer = answer;
    this.answeredAt = performance.now();
    if (this.waiting !== undefined) for (const settle of this.waiting) settle();
    this.round.filled();
  }
}
