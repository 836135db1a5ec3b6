/**
 * Lock-delay (Chubby's; the locker's `lockDelay`): the store as the engine sees it when a lost
 * holder's key must stay unavailable for `delayMs` past that holder's deadline. Every TTL sent to
 * the store (grant, place in line, renewal, extend) is `delayMs` longer than the engine asked for,
 * while the engine keeps counting each lease's deadline from its own TTL: the key then outlives
 * the deadline by `delayMs`. A TTL the store reports for a key it holds for us (a key handed over
 * from its line, a call sent twice) and a validity it measured (a quorum store) are shown without
 * the delay, so the deadline the engine derives from them keeps that margin too — except when
 * what is left is too short to hold anything after the margin, where the TTL is shown as it is (a
 * hand-off grant lasts at most the place TTL, which can be shorter than the delay: taking it as
 * worthless would turn every hand-off away; the holder's first renewal restores the margin), and a
 * measured validity likewise (see `shownValidity`).
 *
 * The same holds for a store's shared locks (semaphores, read-write locks): each holder's TTL.
 *
 * Nothing else changes: a release deletes (or hands over) the key at once; a holder's remaining
 * TTL (`holderTtl`, `inspect`) is the key's real one, delay included, since that is when the key
 * frees. The view offers exactly the capabilities of the store it wraps.
 */
import { MAX_MS } from '../../options/limits.js';
import { leaseValidity } from '../../options/validity.js';
import { batchExtendOf, closerOf, freedHintsOf, inspectorOf, keyCheckOf, queueingOf, wakeUpOf, type LeaveResult } from '../../store/capabilities.js';
import type { AcquireResult, LockStore } from '../../store/LockStore.js';
import { sharedOf, type InspectableSharedStore, type SharedPlace } from '../../store/SharedLockStore.js';

export function lockDelayed(store: LockStore, delayMs: number): LockStore {
  const longer = (ttl: number): number => Math.min(MAX_MS, ttl + delayMs);
  /** A TTL the store reports for a key of ours, as the engine should count it. */
  const shown = (ttl: number): number => (leaseValidity(ttl - delayMs) > 0 ? ttl - delayMs : ttl);
  /**
   * A validity the store measured for a key it keeps `delayMs` longer, as the engine should count
   * it; shown as it is when nothing is left after the margin (the store's drift allowance, a share
   * of the whole `ttl + delayMs`, can exceed `ttl` alone: every grant would be given back at once).
   * The deadline is then `ttl`'s own (the engine caps it so), as every renewal's is: the key's
   * margin is the delay less the clock drift the store allows for on it.
   */
  const shownValidity = (validity: number): number => (validity - delayMs > 0 ? validity - delayMs : validity);
  const acquired = (result: AcquireResult): AcquireResult => {
    if (!result.acquired || (result.ttl === undefined && result.validity === undefined)) return result;
    return {
      ...result,
      ...(result.ttl === undefined ? {} : { ttl: shown(result.ttl) }),
      ...(result.validity === undefined ? {} : { validity: shownValidity(result.validity) }),
    };
  };
  const left = (result: LeaveResult): LeaveResult => (result.granted ? { ...result, ttl: shown(result.ttl) } : result);

  const view: Record<string, unknown> = {
    tryAcquire: (key: string, token: string, ttlMs: number, fences?: number) => store.tryAcquire(key, token, longer(ttlMs), fences).then(acquired),
    extend: (key: string, token: string, ttlMs: number) => store.extend(key, token, longer(ttlMs)),
    release: store.release.bind(store),
  };
  const queue = queueingOf(store);
  if (queue !== undefined) {
    view.tryAcquireInLine = (key: string, token: string, ttlMs: number, fences: number, place: 'keep' | 'leave') =>
      queue.tryAcquireInLine(key, token, longer(ttlMs), fences, place).then(acquired);
    view.leave = (key: string, token: string) => queue.leave(key, token).then(left);
  }
  const wakeUp = wakeUpOf(store) ?? freedHintsOf(store);
  if (wakeUp !== undefined) view.watch = wakeUp.watch.bind(wakeUp);
  const batch = batchExtendOf(store);
  if (batch !== undefined) {
    view.extendMany = (requests: ReadonlyArray<{ key: string; token: string; ttlMs: number }>) =>
      batch.extendMany(requests.map((request) => ({ ...request, ttlMs: longer(request.ttlMs) })));
  }
  const keyCheck = keyCheckOf(store);
  if (keyCheck !== undefined) view.checkKey = keyCheck.checkKey.bind(keyCheck);
  const inspector = inspectorOf(store);
  if (inspector !== undefined) view.inspect = inspector.inspect.bind(inspector);
  const shared = sharedOf(store);
  if (shared !== undefined) {
    // Semaphores and read-write locks: each holder's TTL is kept as a mutex's.
    view.tryAcquireShared = (key: string, token: string, ttlMs: number, weight: number, capacity: number, place: SharedPlace, fences?: number) =>
      shared.tryAcquireShared(key, token, longer(ttlMs), weight, capacity, place, fences).then(acquired);
    view.extendShared = (key: string, token: string, ttlMs: number) => shared.extendShared(key, token, longer(ttlMs));
    view.releaseShared = shared.releaseShared.bind(shared);
    view.leaveShared = shared.leaveShared.bind(shared);
    const sharedInspector = shared as Partial<InspectableSharedStore>;
    if (typeof sharedInspector.inspectShared === 'function') view.inspectShared = sharedInspector.inspectShared.bind(shared);
  }
  const closer = closerOf(store);
  if (closer !== undefined) view.close = closer.close.bind(closer);
  return view as unknown as LockStore;
}
