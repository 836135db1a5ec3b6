/**
 * Loops that take turns on one key through a locker: each takes the key, holds it `holdMs`, gives
 * it back and goes again until `until` (performance.now()); what each got and its longest wait.
 */
import { firstValueFrom, timer } from 'rxjs';
import type { Locker } from '../../src/index.js';

export interface LoopFigures {
  readonly acquisitions: number;
  /** The longest time one acquisition waited (ms). */
  readonly longestWait: number;
}

export function turnLoops(locker: Locker, key: string, count: number, holdMs: number, until: number): Promise<LoopFigures[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      let acquisitions = 0;
      let longestWait = 0;
      while (performance.now() < until) {
        const asked = performance.now();
        const lease = await firstValueFrom(locker.acquire(key, { waitTimeout: 5_000 }));
        longestWait = Math.max(longestWait, performance.now() - asked);
        acquisitions++;
        await firstValueFrom(timer(holdMs));
        await lease.release();
      }
      return { acquisitions, longestWait };
    }),
  );
}
