// @ts-check
/**
 * What every mutation run here shares (npm run mutation, mutation:shared, mutation:session,
 * mutation:quorum): the vitest runner with per-test coverage, the time-outs, the reports under
 * `reports/<name>/`, and a temporary directory of the run's own (runs can go side by side).
 * @param {{ name: string, vitestConfig: string, mutate: string[], concurrency?: number, tempDirName?: string }} run
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function mutationRun({ name, vitestConfig, mutate, concurrency = 2, tempDirName = `.stryker-tmp-${name}` }) {
  return {
    testRunner: 'vitest',
    vitest: { configFile: vitestConfig, related: false },
    coverageAnalysis: 'perTest',
    mutate,
    concurrency,
    timeoutMS: 20_000,
    timeoutFactor: 2,
    reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
    htmlReporter: { fileName: `reports/${name}/mutation.html` },
    jsonReporter: { fileName: `reports/${name}/mutation.json` },
    tempDirName,
    cleanTempDir: true,
    ignoreStatic: true,
  };
}
