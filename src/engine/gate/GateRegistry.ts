/**
 * A locker's gates: one per key in use (shared by all of the locker's acquisitions of that key),
 * or one per acquisition without the local gate. A gate is forgotten as soon as its key has
 * nothing held, in flight or waiting, so memory is bounded by the keys in use.
 */
import type { GateContext, GateDirectory } from './GateContext.js';
import { KeyGate } from './KeyGate.js';
import { RecentGiveBacks } from './RecentGiveBacks.js';

export class GateRegistry implements GateDirectory {
  private readonly shared = new Map<string, KeyGate>();
  /**
   * One shared gate kept outside the Map: with one key in use at a time, gates come and go with
   * no Map set and delete per acquisition (a Map that empties is shrunk and regrown, a runtime
   * call each time: ~3% of the engine's instructions per acquire + release). A key's gate is in
   * one place only: here, or in `shared`.
   */
  private solo: KeyGate | undefined;
  /** Gates of their own (`localGate: false`), kept only so that close() reaches them. */
  private readonly own = new Set<KeyGate>();
  /** Keys this locker gave back to a store without a line under contention, and when. */
  private readonly giveBacks = new RecentGiveBacks();

  constructor(
    private readonly ctx: GateContext,
    /** Share one gate per key among the locker's acquisitions (the `localGate` option). */
    private readonly localGate: boolean,
  ) {}

  /** Keys with a gate right now (holders, waiters or releases in flight). */
  get size(): number {
    return (this.solo === undefined ? 0 : 1) + this.shared.size + this.own.size;
  }

  /** The gate of `storeKey`: shared by all of this locker's waiters, or one of its own without the local gate. */
  gateFor(key: string, storeKey: string): KeyGate {
    if (!this.localGate) {
      const gate = new KeyGate(this.ctx, this, key, storeKey);
      this.own.add(gate);
      return gate;
    }
    const solo = this.solo;
    if (solo !== undefined && solo.storeKey === storeKey) return solo;
    let gate = this.shared.size === 0 ? undefined : this.shared.get(storeKey);
    if (gate === undefined) {
      gate = new KeyGate(this.ctx, this, key, storeKey);
      if (solo === undefined) this.solo = gate;
      else this.shared.set(storeKey, gate);
    }
    return gate;
  }

  /** This locker's side of `storeKey`: held by one of its acquisitions (or passing), and how many wait. */
  localSide(storeKey: string): { held: boolean; waiting: number } {
    let held = false;
    let waiting = 0;
    const add = (gate: KeyGate): void => {
      const state = gate.stateName;
      if (state === 'held' || state === 'passing') held = true;
      waiting += gate.waiting;
    };
    const gate = this.solo?.storeKey === storeKey ? this.solo : this.shared.get(storeKey);
    if (gate !== undefined) add(gate);
    for (const own of this.own) if (own.storeKey === storeKey) add(own);
    return { held, waiting };
  }

  forget(gate: object): void {
    const keyGate = gate as KeyGate;
    if (this.solo === keyGate) this.solo = undefined;
    else if (this.shared.get(keyGate.storeKey) === keyGate) this.shared.delete(keyGate.storeKey);
    else this.own.delete(keyGate);
  }

  noteGiveBack(storeKey: string, at: number): void {
    this.giveBacks.note(storeKey, at);
  }

  lastGiveBack(storeKey: string): number | undefined {
    return this.giveBacks.last(storeKey);
  }

  /** Closes every gate (see KeyGate.close); resolves once their releases were answered. */
  close(): Promise<unknown> {
    const gates = [...(this.solo === undefined ? [] : [this.solo]), ...this.shared.values(), ...this.own];
    this.solo = undefined;
    this.shared.clear();
    this.own.clear();
    return Promise.all(
      gates.map((gate) => {
        try {
          return gate.close();
        } catch {
          // one gate's failure must not leave the others' locks held
          return undefined;
        }
      }),
    );
  }
}
