/** What the bench tests' hand-made rows and specs share: a run environment and the bench's settings. */
import type { RowEnv } from '../../bench/results.js';
import type { BenchSettings, ScenarioName } from '../../bench/scenarios.js';

/** The run environment a hand-made result row carries (bench/results.ts RowEnv). */
export const ROW_ENV: RowEnv = {
  runAt: '2026-01-01T00:00:00.000Z',
  redisVersion: '7.0.15',
  node: 'v20',
  cpu: 'cpu',
  cores: 2,
  pinned: null,
  quick: true,
  rxjsLockSource: 'test',
};

/** The bench's settings for `scenarios`: its defaults, or with `quick` its smoke-test lengths (as BENCH_QUICK=1). */
export function benchSettings(scenarios: ScenarioName[], quick: boolean): BenchSettings {
  return quick
    ? {
        quick,
        hotSeconds: 1,
        shortSeconds: 0.5,
        seedTries: 40,
        stormAcquisitions: 800,
        floorSeconds: 0.5,
        engineSeconds: 0.15,
        scenarios,
        libraries: undefined,
      }
    : { quick, hotSeconds: 10, shortSeconds: 3, seedTries: 400, stormAcquisitions: 4000, floorSeconds: 2, engineSeconds: 1.5, scenarios, libraries: undefined };
}
