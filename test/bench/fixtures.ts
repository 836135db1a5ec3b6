/** What the bench tests' hand-made rows and specs share: a run environment and the bench's settings. */
import type { RowEnv } from '../../bench/results.js';
import { readSettings, type BenchSettings, type ScenarioName } from '../../bench/scenarios.js';

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

/** The bench's settings for `scenarios`, read as `npm run bench` reads them from an environment that sets only those (and BENCH_QUICK=1 with `quick`). */
export function benchSettings(scenarios: ScenarioName[], quick: boolean): BenchSettings {
  return readSettings({ BENCH_SCENARIOS: scenarios.join(','), ...(quick ? { BENCH_QUICK: '1' } : {}) });
}
