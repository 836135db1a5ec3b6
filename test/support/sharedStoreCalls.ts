/**
 * Views of a real `RedisLockStore` for the tests of shared-lock waits (permitWakeGrant.test.ts,
 * attackPermitSignalGuards.test.ts): the store's calls counted or its answers changed in place, on
 * the store object itself, so the locker built on it (which looks its methods up at each call)
 * goes through them. Every call still reaches Redis.
 */
import type { RedisLockStore } from '../../src/redis.js';
import type { StoreWatch, WakeSignal } from '../../src/store/capabilities.js';

/** Counts `store`'s tryAcquireShared calls; `after` runs once the store answered a call, before the caller hears it. */
export function countAttempts(store: RedisLockStore, after?: (n: number) => Promise<void>): { readonly n: number } {
  const counter = { n: 0 };
  const tryAcquireShared = store.tryAcquireShared.bind(store);
  store.tryAcquireShared = async (...args) => {
    const n = ++counter.n;
    const answer = await tryAcquireShared(...args);
    await after?.(n);
    return answer;
  };
  return counter;
}

/**
 * `store` as a store that does not date its answers: tryAcquireShared's answers lose their `at`
 * (the store's clock when it kept a place), which the `AcquireResult` contract leaves optional.
 */
export function undatedAnswers(store: RedisLockStore): void {
  const tryAcquireShared = store.tryAcquireShared.bind(store);
  store.tryAcquireShared = async (...args) => {
    const answer = await tryAcquireShared(...args);
    if (answer.acquired || !('at' in answer)) return answer;
    const { at: _at, ...undated } = answer;
    return undated;
  };
}

/** The wake-up watches opened on a store ({@link countWatches}). */
export interface WatchCount {
  /** Watches opened so far. */
  readonly opened: number;
  /** Watches opened and not stopped yet. */
  readonly live: number;
  /** The most watches that were live at once. */
  readonly most: number;
  /** The listener and token of the last watch opened (to hand it a signal directly). */
  readonly last: { readonly token: string; readonly listener: (signal: WakeSignal) => void } | undefined;
}

/**
 * Counts the wake-up watches (`WakeUpStore.watch`, ../../src/store/capabilities.ts) opened on
 * `store` and stopped: each call of `watch` is one opened, each first `stop()` of what it returned
 * one stopped. (The store's `watch` is a getter: the count is an own property of the object.)
 */
export function countWatches(store: RedisLockStore): WatchCount {
  const watch = store.watch;
  if (watch === undefined) throw new Error('countWatches: the store has no wake-up signals');
  const count: { opened: number; live: number; most: number; last: WatchCount['last'] } = { opened: 0, live: 0, most: 0, last: undefined };
  const counted = (key: string, token: string, listener: (signal: WakeSignal) => void): StoreWatch => {
    const inner = watch(key, token, listener);
    count.opened++;
    count.live++;
    count.most = Math.max(count.most, count.live);
    count.last = { token, listener };
    let stopped = false;
    return {
      get active() {
        return inner.active;
      },
      ready: inner.ready,
      stop: () => {
        if (!stopped) count.live--;
        stopped = true;
        inner.stop();
      },
    };
  };
  Object.defineProperty(store, 'watch', { value: counted, configurable: true });
  return count;
}
