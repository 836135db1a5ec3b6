/**
 * The states of a key's local gate ({@link KeyGate}) and the moves between them. A gate is in
 * exactly one state; `KeyGate.moveTo` is the only place that changes it, and it refuses a move
 * this table does not allow (under `RXJS_LOCK_STRICT=1`, as the tests run, it throws).
 *
 * ```
 *            enqueue                 store grant               holder releases, may pass
 *   idle ─────────────▶ acquiring ─────────────────▶ held ───────────────────────────▶ passing
 *    ▲  ▲                │ failed / emptied           │ ▲                                 │
 *    │  └────────────────┘                            │ └─────── next local holder ───────┘
 *    │                   │ granted to nobody          │ holder releases, no pass          │ nobody to pass to
 *    │                   ▼                            ▼                                   ▼
 *    └──────────────── releasing ◀────────────────────┴───────────────────────────────────┘
 *   (lease lost: held / passing ─▶ idle)        (close: every state ─▶ closed, after releasing)
 * ```
 */
import type { Turn } from '../handoff/HandoffPolicy.js';
import type { HeldLease } from '../lease/HeldLease.js';
import type { StoreLease } from '../lease/StoreLease.js';
import type { StoreSession } from '../session/StoreSession.js';

/** Nothing held, nothing in flight (a gate with nobody waiting is forgotten). */
export interface Idle {
  readonly name: 'idle';
}

/** The first waiter's session works at the store. */
export interface Acquiring {
  readonly name: 'acquiring';
  readonly session: StoreSession;
}

/** A local holder holds the lock; `storeLease` keeps it in the store for this turn. */
export interface Held {
  readonly name: 'held';
  readonly storeLease: StoreLease;
  readonly turn: Turn;
  readonly holder: HeldLease;
}

/** Between two local holders of one turn (the next one gets it in a microtask). */
export interface Passing {
  readonly name: 'passing';
  readonly storeLease: StoreLease;
  readonly turn: Turn;
}

/** The store lease is being given back; the next waiter goes to the store once that is answered. */
export interface Releasing {
  readonly name: 'releasing';
}

/** The locker was closed. */
export interface Closed {
  readonly name: 'closed';
}

export type GateState = Idle | Acquiring | Held | Passing | Releasing | Closed;
export type GateStateName = GateState['name'];

export const IDLE: Idle = Object.freeze({ name: 'idle' });

// The states a gate enters on every acquisition, as classes: objects of one shape made at one
// site, which V8 keeps in the young generation (an object literal's allocation site can be
// pretenured into old space once a burst of them survives, and then every one costs a full
// collection's work).

// (`name` declared first: at the same offset in every state, as in the frozen ones.)

export class AcquiringState implements Acquiring {
  readonly name = 'acquiring';
  readonly session: StoreSession;
  constructor(session: StoreSession) {
    this.session = session;
  }
}

export class HeldState implements Held {
  readonly name = 'held';
  readonly storeLease: StoreLease;
  readonly turn: Turn;
  readonly holder: HeldLease;
  constructor(storeLease: StoreLease, turn: Turn, holder: HeldLease) {
    this.storeLease = storeLease;
    this.turn = turn;
    this.holder = holder;
  }
}

export class PassingState implements Passing {
  readonly name = 'passing';
  readonly storeLease: StoreLease;
  readonly turn: Turn;
  constructor(storeLease: StoreLease, turn: Turn) {
    this.storeLease = storeLease;
    this.turn = turn;
  }
}
export const RELEASING: Releasing = Object.freeze({ name: 'releasing' });
export const CLOSED: Closed = Object.freeze({ name: 'closed' });

/** Every move a gate may make. */
export const MOVES: Readonly<Record<GateStateName, readonly GateStateName[]>> = Object.freeze({
  idle: ['acquiring', 'closed'],
  acquiring: ['held', 'releasing', 'idle', 'closed'],
  held: ['passing', 'releasing', 'idle'],
  passing: ['held', 'releasing', 'idle'],
  releasing: ['idle', 'closed'],
  closed: [],
});

/** Is `from → to` one of {@link MOVES}? (Written out: it runs on every move of every gate.) */
export function canMove(from: GateStateName, to: GateStateName): boolean {
  switch (from) {
    case 'idle':
      return to === 'acquiring' || to === 'closed';
    case 'acquiring':
      return to === 'held' || to === 'releasing' || to === 'idle' || to === 'closed';
    case 'held':
    case 'passing':
      return to === 'passing' ? from === 'held' : to === 'held' ? from === 'passing' : to === 'releasing' || to === 'idle';
    case 'releasing':
      return to === 'idle' || to === 'closed';
    case 'closed':
      return false;
  }
}
