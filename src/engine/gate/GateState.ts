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

const BIT: Readonly<Record<GateStateName, number>> = { idle: 1, acquiring: 2, held: 4, passing: 8, releasing: 16, closed: 32 };
const ALLOWED = Object.fromEntries(Object.entries(MOVES).map(([from, tos]) => [from, tos.reduce((mask, to) => mask | BIT[to], 0)])) as Record<GateStateName, number>;

export function canMove(from: GateStateName, to: GateStateName): boolean {
  return (ALLOWED[from] & BIT[to]) !== 0;
}
