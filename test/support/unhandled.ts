/** Unhandled rejections while a test file runs: a test suite promises none. */
import { afterAll, beforeAll, expect } from 'vitest';

/** Records the process's unhandled rejections in `seen` between `start()` and `stop()`. */
export function unhandledRejections(): { readonly seen: unknown[]; start(): void; stop(): void } {
  const seen: unknown[] = [];
  const onUnhandled = (reason: unknown) => seen.push(reason);
  return {
    seen,
    start: () => void process.on('unhandledRejection', onUnhandled),
    stop: () => void process.off('unhandledRejection', onUnhandled),
  };
}

/** Collects unhandled rejections from before the first test of the file (or describe) on, and expects none after the last. */
export function expectNoUnhandledRejections(): void {
  const log = unhandledRejections();
  beforeAll(() => log.start());
  afterAll(() => {
    log.stop();
    expect(log.seen).toEqual([]);
  });
}
