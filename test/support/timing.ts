/** Waiting helpers for tests on real time. */

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, polling every `everyMs` for up to `ms`; rejects after that. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 3000, everyMs = 5): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not reached in time');
    await sleep(everyMs);
  }
}
