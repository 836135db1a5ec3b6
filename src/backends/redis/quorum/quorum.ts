/**
 * Quorum arithmetic: how many nodes decide, and how long a lock won on them stays safe.
 */
import type { RedlockSettings } from './RedlockStoreOptions.js';

/** A majority of `nodes`: ⌊N/2⌋ + 1. */
export function quorumOf(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/** The clock-drift allowance for a TTL: `ttl × driftFactor + drift`. */
export function driftOf(ttl: number, settings: RedlockSettings): number {
  return ttl * settings.driftFactor + settings.drift;
}

/**
 * How long a lock set with `ttl` on a quorum stays safe once the call that set it has taken
 * `elapsed` ms: `ttl − elapsed − drift`. The nodes' keys expire no earlier than `ttl` after the
 * call started (each set it after that), less what their clocks may run fast. Elapsed counts from
 * the start of this call only: an earlier, failed attempt set nothing that is still held.
 */
export function validityOf(ttl: number, elapsed: number, settings: RedlockSettings): number {
  return ttl - elapsed - driftOf(ttl, settings);
}
