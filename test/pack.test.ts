/**
 * What `npm pack` ships, from a checkout that was never built: `prepack` builds dist/ first, the
 * tarball holds the builds, the sources, README, LICENSE and CHANGELOG and nothing of the repository's
 * tests, benchmarks or tooling, and it stays within a size budget. Then publint and Are the
 * Types Wrong (attw) check the tarball: exports map, files, and types under every module
 * resolution (node10, node16 from CJS and from ESM, bundler) for every subpath. Last, a fresh
 * project installs the tarball with npm, as a user would (dependencies from npm's cache, or the
 * registry), first without the optional peers, then with ioredis, and uses it from ESM, CommonJS
 * and TypeScript (node16 and bundler resolution).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
/** Packed (gzip) size budget of the tarball, in bytes. */
// (raised from 400 kB with semaphores, read-write locks, multi-key locks and their inspection and
// Nest decorators, which took the tarball from 369 to 505 kB: every source file ships about seven
// times — src, and per build .js, .d.ts and .js.map; the src and maps, 40% of it unpacked, are kept
// for debugging into the library, and are what to drop first if the size matters; 600 kB when the
// quorum store's hints and shared long-wait reports took it just past 560 kB; 640 kB when the GraphQL
// subscription lock and semaphore permit passes took it to 601.5 kB)
const PACKED_BUDGET = 640_000;

interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly files: ReadonlyArray<{ readonly path: string }>;
}

/** A copy of the files git tracks (so no dist/), with the repository's node_modules beside them. */
function unbuiltCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rxjs-lock-pack-'));
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '');
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
    [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
    ) as PackResult[];
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

  describe('installed into a fresh project', () => {
    let project: string;
    const npm = (...args: string[]) =>
      execFileSync('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const node = (file: string, source: string) => {
      writeFileSync(join(project, file), source);
      return execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' }).trim();
    };
    const typecheck = (module: string, moduleResolution: string) => {
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      return spawnSync(
        process.execPath,
        [tsc, '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', module, '--moduleResolution', moduleResolution, 'use.ts'],
        { cwd: project, encoding: 'utf8' },
      );
    };

    beforeAll(() => {
      project = mkdtempSync(join(tmpdir(), 'rxjs-lock-user-'));
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user', version: '1.0.0', private: true }));
      npm('install', join(dir, packed!.filename));
    }, 180_000);

    it('runs without the optional peers, from ESM and from CommonJS (rxjs comes as a peer)', () => {
      const esm = node(
        'use.mjs',
        `import { createLocker, isLockTimeoutError } from 'rxjs-lock';
         import { RedisLockStore } from 'rxjs-lock/redis';
         import { of, lastValueFrom } from 'rxjs';
         const locker = createLocker();
         const value = await lastValueFrom(of('esm').pipe(locker.withLock('k')));
         await locker.close();
         console.log(value, typeof isLockTimeoutError, typeof RedisLockStore);`,
      );
      expect(esm).toBe('esm function function');
      const cjs = node(
        'use.cjs',
        `const { createLocker } = require('rxjs-lock');
         const { findOverlaps } = require('rxjs-lock/testing');
         const { of, lastValueFrom } = require('rxjs');
         const locker = createLocker();
         lastValueFrom(of('cjs').pipe(locker.withLock('k'))).then(async (v) => { await locker.close(); console.log(v, typeof findOverlaps); });`,
      );
      expect(cjs).toBe('cjs function');
    });

    it('type-checks with ioredis installed, under node16 and bundler resolution', () => {
      npm('install', 'ioredis@6');
      writeFileSync(
        join(project, 'use.ts'),
        `import { createLocker, type Lease } from 'rxjs-lock';
         import { RedisLockStore } from 'rxjs-lock/redis';
         import { Redis } from 'ioredis';
         export async function main(): Promise<number> {
           const redis = new Redis({ lazyConnect: true });
           const locker = createLocker({ store: new RedisLockStore(redis) });
           const lease: Lease = await new Promise((resolve) => locker.acquire('k').subscribe(resolve));
           return lease.fence;
         }`,
      );
      for (const [module, resolution] of [
        ['node16', 'node16'],
        ['esnext', 'bundler'],
      ]) {
        const checked = typecheck(module!, resolution!);
        expect({ module, status: checked.status, out: checked.stdout }).toEqual({ module, status: 0, out: '' });
      }
      // and a type error is reported, so the check is not vacuous
      writeFileSync(join(project, 'use.ts'), `import { createLocker } from 'rxjs-lock';\nexport const n: number = createLocker();\n`);
      expect(typecheck('node16', 'node16').status).not.toBe(0);
    }, 180_000);

    it('with NestJS installed: rxjs-lock/nestjs loads from ESM and CommonJS and type-checks a decorated controller', () => {
      npm('install', '@nestjs/common@12', '@nestjs/core@12', 'reflect-metadata');
      const esm = node(
        'nest.mjs',
        `import 'reflect-metadata';
         import { LockModule, WithLock } from 'rxjs-lock/nestjs';
         console.log(typeof LockModule.forRoot, typeof WithLock('order:{params.id}'));`,
      );
      expect(esm).toBe('function function');
      const cjs = node('nest.cjs', `require('reflect-metadata'); const { LockModule } = require('rxjs-lock/nestjs'); console.log(typeof LockModule.forRoot);`);
      expect(cjs).toBe('function');
      // (an ES module: Nest 12 ships only ESM, which a CommonJS file cannot import under node16)
      writeFileSync(
        join(project, 'controller.mts'),
        `import { Controller, Param, Post } from '@nestjs/common';
         import { WithLock } from 'rxjs-lock/nestjs';
         @Controller('orders')
         export class OrdersController {
           @Post(':id/pay')
           @WithLock('order:{params.id}', { waitTimeout: 2_000 })
           pay(@Param('id') id: string): string {
             return id;
           }
         }`,
      );
      for (const [module, resolution] of [
        ['node16', 'node16'],
        ['esnext', 'bundler'],
      ]) {
        const checked = spawnSync(
          process.execPath,
          [
            join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
            '--noEmit',
            '--strict',
            '--skipLibCheck',
            '--experimentalDecorators',
            '--target',
            'es2022',
            '--module',
            module!,
            '--moduleResolution',
            resolution!,
            'controller.mts',
          ],
          { cwd: project, encoding: 'utf8' },
        );
        expect({ module, status: checked.status, out: checked.stdout }).toEqual({ module, status: 0, out: '' });
      }
    }, 180_000);
  });
});
