/**
 * The shared time limit of store calls: one timer for the whole FIFO of a locker's calls.
 */
import { describe, expect, it } from 'vitest';
import { CallDeadlines, type Tracked } from '../../src/engine/calls/CallDeadlines.js';

/** Tracks a call that runs `onExpire` when its limit passes. */
function track(deadlines: CallDeadlines, onExpire: () => void): Tracked {
  const call: Tracked = { settled: false, dueAt: 0, next: undefined, expire: onExpire };
  deadlines.track(call);
  return call;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('CallDeadlines', () => {
  it('expires exactly the calls that were not settled, whatever order they were settled in', async () => {
    const deadlines = new CallDeadlines(30);
    const expired: string[] = [];
    const a = track(deadlines, () => expired.push('a'));
    const b = track(deadlines, () => expired.push('b'));
    track(deadlines, () => expired.push('c'));
    const d = track(deadlines, () => expired.push('d'));
    deadlines.settle(b);
    deadlines.settle(d);
    await sleep(60);
    expect(expired).toEqual(['a', 'c']);
    expect(a.settled).toBe(true);
  });

  it('gives a call made later its own full limit after the head was answered', async () => {
    const deadlines = new CallDeadlines(200);
    const expired: Array<[string, number]> = [];
    const start = performance.now();
    deadlines.settle(track(deadlines, () => expired.push(['first', performance.now() - start])));
    await sleep(100);
    const secondTrackedAt = performance.now() - start;
    track(deadlines, () => expired.push(['second', performance.now() - start]));
    // Until the second call's own deadline (200 ms after it was tracked) nothing may fire, even
    // though the first call's deadline, which armed the timer, has passed.
    while (performance.now() - start < secondTrackedAt + 170) {
      await sleep(10);
      expect(expired).toEqual([]);
    }
    while (expired.length === 0 && performance.now() - start < 2_000) await sleep(10);
    expect(expired.map(([name]) => name)).toEqual(['second']);
    expect(expired[0]![1]).toBeGreaterThanOrEqual(secondTrackedAt + 199);
  });

  it('does not fire a call settled after it was tracked, even when it is not at the head', async () => {
    const deadlines = new CallDeadlines(20);
    const fired: number[] = [];
    const calls = Array.from({ length: 100 }, (_, i) => track(deadlines, () => fired.push(i)));
    calls.forEach((call, i) => i % 3 !== 0 && deadlines.settle(call));
    await sleep(50);
    expect(fired).toEqual(Array.from({ length: 100 }, (_, i) => i).filter((i) => i % 3 === 0));
  });
});
