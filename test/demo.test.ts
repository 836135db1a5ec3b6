/**
 * `npm run demo` is the project's main job: a short run must finish cleanly and report no overlaps.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');

describe('npm run demo', () => {
  it('runs workers against an embedded Redis and prints a summary with 0 overlaps', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'demo/main.ts'], {
      cwd: root,
      env: { ...process.env, DEMO_WORKERS: '2', DEMO_LOOPS: '2', DEMO_SECONDS: '1' },
      timeout: 60_000,
    });
    expect(stdout).toContain('Summary');
    expect(stdout).toMatch(/overlaps\s+0\b/);
    expect(stdout).toMatch(/acquisitions\s+[\d,]+ in/);
    expect(stdout).toMatch(/Redis commands\s+[\d.]+ per acquisition/);
    expect(stdout).toMatch(/wait for the lock\s+p50 [\d.]+ ms\s+p99 [\d.]+ ms/);
  });
});
