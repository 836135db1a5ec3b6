/** Waiting helpers for tests on real time. */

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `check` holds, polling every `everyMs` for up to `ms`; rejects after that (naming
 * `what`, when given).
 */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 3000, everyMs = 5, what?: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(what === undefined ? 'condition not reached in time' : `never: ${what}`);
    await sleep(everyMs);
  }
}

/** {@link eventually} as the Nest tests say it: the condition, what it means, up to 15 s. */
export const until = (check: () => Promise<boolean> | boolean, what: string, ms = 15_000): Promise<void> => eventually(check, ms, 5, what);
