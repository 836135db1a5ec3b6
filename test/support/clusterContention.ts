/**
 * Contention on a few lock keys from several lockers (each with its own Cluster client and store,
 * as separate processes would have), for the Cluster fault tests: every worker takes a random key
 * with `withLock`, stays inside a few milliseconds, and counts how many holders a key had at once
 * (an overlap counter); failures are collected, never thrown.
 */
import { defer, firstValueFrom, finalize, timer } from 'rxjs';
import type { Locker } from '../../src/index.js';

export interface Contention {
  /** The most holders any key had at once (1 when exclusive). */
  readonly maxInside: number;
  /** Critical sections run. */
  readonly wins: number;
  /** Wins after `mark()` was called. */
  readonly winsSinceMark: number;
  /** Every failure of an acquisition or a held section. */
  readonly errors: unknown[];
  /** Notes the moment from which `winsSinceMark` counts. */
  mark(): void;
  /** Stops the workers and waits for them. */
  stop(): Promise<void>;
}

export function contend(lockers: readonly Locker[], keys: readonly string[], workersPerLocker = 2, holdMs = 3): Contention {
  const inside = new Map<string, number>();
  const errors: unknown[] = [];
  let maxInside = 0;
  let wins = 0;
  let marked = Infinity;
  let stopped = false;
  const worker = async (locker: Locker) => {
    while (!stopped) {
      const key = keys[Math.floor(Math.random() * keys.length)]!;
      const section = defer(() => {
        const now = (inside.get(key) ?? 0) + 1;
        inside.set(key, now);
        maxInside = Math.max(maxInside, now);
        return timer(holdMs).pipe(finalize(() => inside.set(key, inside.get(key)! - 1)));
      });
      try {
        await firstValueFrom(section.pipe(locker.withLock(key)));
        wins++;
      } catch (error) {
        errors.push(error);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const running = lockers.flatMap((locker) => Array.from({ length: workersPerLocker }, () => worker(locker)));
  let winsAtMark = 0;
  return {
    get maxInside() {
      return maxInside;
    },
    get wins() {
      return wins;
    },
    get winsSinceMark() {
      return marked === Infinity ? 0 : wins - winsAtMark;
    },
    errors,
    mark() {
      marked = 0;
      winsAtMark = wins;
    },
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}
