/**
 * The arguments every store checks before it touches a lock, one copy for every backend (memory,
 * Redis, the quorum store): a TTL, a number of fences to reserve, a shared lock's weight and
 * capacity. The engine never sends a bad one (it validates the options they come from); a caller
 * using a store directly may, and is refused with a {@link LockOptionsError} naming the argument
 * and the range allowed, with nothing granted, extended or changed. (A TTL of NaN, say, made the
 * in-memory store grant a key that never expired.)
 */
import { LockOptionsError } from '../errors/errors.js';
import { MAX_MS } from './limits.js';

/** A TTL a store accepts: an integer from 1 ms to {@link MAX_MS}. */
export function isStoreTtl(ttlMs: number): boolean {
  return Number.isInteger(ttlMs) && ttlMs >= 1 && ttlMs <= MAX_MS;
}

export function storeTtlError(ttlMs: unknown): LockOptionsError {
  return new LockOptionsError('ttlMs', `an integer from 1 to ${MAX_MS} (ms)`, ttlMs);
}

/** A number of fences a grant may reserve: a safe integer from 1 (a store grants at most 1,024). */
export function isFenceCount(fences: number): boolean {
  return Number.isSafeInteger(fences) && fences >= 1;
}

export function fenceCountError(fences: unknown): LockOptionsError {
  return new LockOptionsError('fences', 'an integer from 1 (a grant reserves at most 1,024)', fences);
}

/**
 * What is wrong with a shared lock acquisition's TTL, weight, capacity or fence count, or
 * `undefined` when nothing is. A weight above the capacity is refused: such a waiter could never be
 * granted and would keep everyone behind it out of the line.
 */
export function sharedAcquireError(ttlMs: number, weight: number, capacity: number, fences: number): LockOptionsError | undefined {
  if (!isStoreTtl(ttlMs)) return storeTtlError(ttlMs);
  if (!Number.isSafeInteger(weight) || weight < 1) return new LockOptionsError('weight', 'a positive safe integer', weight);
  if (!Number.isSafeInteger(capacity) || capacity < weight) return new LockOptionsError('capacity', `a safe integer from the weight (${weight})`, capacity);
  if (!isFenceCount(fences)) return fenceCountError(fences);
  return undefined;
}
