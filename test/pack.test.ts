/**
 * What `npm pack` ships, from a checkout that was never built: `prepack` builds dist/ first, the
 * tarball holds the builds, the sources, README, LICENSE and CHANGELOG and nothing of the repository's
 * tests, benchmarks or tooling, and it stays within a size budget. Then publint and Are the
 * Types Wrong (attw) check the tarball: exports map, files, and types under every module
 * resolution (node10, node16 from CJS and from ESM, bundler) for every subpath.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
/** Packed (gzip) size budget of the tarball, in bytes. */
const PACKED_BUDGET = 400_000;

interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly files: ReadonlyArray<{ readonly path: string }>;
}

/** A copy of the files git tracks (so no dist/), with the repository's node_modules beside them. */
function unbuiltCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rxjs-lock-pack-'));
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter((f) => f !== '');
  for (const file of tracked) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(root, file), join(dir, file));
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

const bin = (name: string) => join(root, 'node_modules', '.bin', name);

describe('npm pack', () => {
  let dir: string;
  let packed: PackResult | undefined;
  beforeAll(() => {
    dir = unbuiltCheckout();
    [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as PackResult[];
  }, 180_000);

  it('builds dist/ first (prepack) and ships only what users need, within the size budget', () => {
    const paths = packed!.files.map((f) => f.path);
    for (const entry of ['index', 'redis', 'testing', 'nestjs', 'otel']) {
      for (const format of ['esm', 'cjs']) {
        expect(paths).toContain(`dist/${format}/${entry}.js`);
        expect(paths).toContain(`dist/${format}/${entry}.d.ts`);
      }
    }
    expect(paths).toContain('dist/cjs/package.json');
    const topLevel = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'];
    expect(paths).toEqual(expect.arrayContaining([...topLevel, 'src/index.ts']));
    expect(paths.filter((p) => !/^(dist|src)\//.test(p) && !topLevel.includes(p))).toEqual([]);
    expect(packed!.size).toBeLessThan(PACKED_BUDGET);
  });

  it('passes publint (strict: warnings count) and attw (every subpath, every resolution)', () => {
    const tarball = join(dir, packed!.filename);
    const lint = spawnSync(bin('publint'), ['run', tarball, '--strict'], { encoding: 'utf8' });
    expect({ status: lint.status, out: lint.stdout + lint.stderr }).toMatchObject({ status: 0, out: expect.stringContaining('All good!') });
    const types = spawnSync(bin('attw'), [tarball, '--format', 'json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const report = JSON.parse(types.stdout) as { analysis: { problems: unknown[]; entrypoints: Record<string, unknown> } };
    expect(Object.keys(report.analysis.entrypoints).sort()).toEqual(['.', './nestjs', './otel', './package.json', './redis', './testing']);
    expect(report.analysis.problems).toEqual([]);
    expect(types.status).toBe(0);
  }, 60_000);
});
