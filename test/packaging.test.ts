/**
 * The published shape: both builds (ESM and CommonJS) load through the exports map under their
 * package name, each subpath resolves, and errors are recognised across the two copies.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
let consumer: string;

beforeAll(() => {
  // A consumer project with rxjs-lock installed as published (package.json + a fresh build of
  // its own, so it never races a build of the working tree) and its dependencies beside it.
  consumer = mkdtempSync(join(tmpdir(), 'rxjs-lock-consumer-'));
  const pkg = join(consumer, 'node_modules', 'rxjs-lock');
  mkdirSync(pkg, { recursive: true });
  execFileSync(process.execPath, ['scripts/build.mjs', join(pkg, 'dist')], { cwd: root, stdio: 'pipe' });
  copyFileSync(join(root, 'package.json'), join(pkg, 'package.json'));
  const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const dep of [...Object.keys(dependencies), 'rxjs', 'ioredis', '@types', '@nestjs', '@opentelemetry', 'reflect-metadata'])
    symlinkSync(join(root, 'node_modules', dep), join(consumer, 'node_modules', dep), 'dir');
}, 300_000);

const run = (file: string, source: string) => {
  writeFileSync(join(consumer, file), source);
  return execFileSync(process.execPath, [join(consumer, file)], { cwd: consumer, encoding: 'utf8' }).trim();
};

describe('package exports', () => {
  it('loads as ESM: core, /redis and /testing', () => {
    const out = run(
      'esm.mjs',
      `import { createLocker, withLock, MemoryLockStore, isLockError } from 'rxjs-lock';
       import { RedisLockStore } from 'rxjs-lock/redis';
       import { findOverlaps } from 'rxjs-lock/testing';
       import { of, lastValueFrom } from 'rxjs';
       const v = await lastValueFrom(of('esm ok').pipe(withLock('k')));
       console.log([v, typeof createLocker, typeof MemoryLockStore, typeof isLockError, typeof RedisLockStore, typeof findOverlaps].join(' '));`,
    );
    expect(out).toBe('esm ok function function function function function');
  });

  it('loads as CommonJS: core, /redis and /testing', () => {
    const out = run(
      'cjs.cjs',
      `const { createLocker, withLock } = require('rxjs-lock');
       const { RedisLockStore } = require('rxjs-lock/redis');
       const { findOverlaps } = require('rxjs-lock/testing');
       const { of, lastValueFrom } = require('rxjs');
       lastValueFrom(of('cjs ok').pipe(withLock('k'))).then((v) => console.log([v, typeof createLocker, typeof RedisLockStore, typeof findOverlaps].join(' ')));`,
    );
    expect(out).toBe('cjs ok function function function');
  });

  it('recognises an error from the CommonJS copy with the guard from the ESM copy', () => {
    const out = run(
      'dual.mjs',
      `import { createRequire } from 'node:module';
       import { isLockOptionsError, LockOptionsError } from 'rxjs-lock';
       const cjs = createRequire(import.meta.url)('rxjs-lock');
       try { cjs.createLocker({ ttl: -1 }); } catch (e) {
         console.log(isLockOptionsError(e), e instanceof LockOptionsError, e.name);
       }`,
    );
    expect(out).toBe('true false LockOptionsError');
  });

  // A Nest application written without decorator syntax (plain JavaScript), run from each build.
  const nestApp = (load: string) => `${load}
       class Orders { pay() { return 'paid'; } }
       const pay = Object.getOwnPropertyDescriptor(Orders.prototype, 'pay');
       WithLock('order:{query.id}', { waitTimeout: 0 })(Orders.prototype, 'pay', pay);
       Get('pay')(Orders.prototype, 'pay', pay);
       Controller()(Orders);
       class AppModule {}
       Module({ imports: [LockModule.forRoot({ store: new MemoryLockStore() })], controllers: [Orders] })(AppModule);
       const app = await NestFactory.create(AppModule, { logger: false });
       await app.listen(0, '127.0.0.1');
       const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
       const ok = await fetch(url + '/pay?id=1');
       const missing = await fetch(url + '/pay');
       console.log(ok.status, await ok.text(), missing.status, typeof LOCKER);
       await app.close();`;

  it('loads rxjs-lock/nestjs as ESM and serves a locked route', () => {
    const out = run(
      'nest-esm.mjs',
      nestApp(`import 'reflect-metadata';
       import { Controller, Get, Module } from '@nestjs/common';
       import { NestFactory } from '@nestjs/core';
       import { MemoryLockStore } from 'rxjs-lock';
       import { LockModule, WithLock, LOCKER } from 'rxjs-lock/nestjs';`),
    );
    expect(out).toBe('200 paid 400 symbol');
  });

  it('loads rxjs-lock/nestjs as CommonJS and serves a locked route; rxjs-lock and rxjs-lock/redis never load Nest', () => {
    const out = run(
      'nest-cjs.cjs',
      `const loadedNest = () => Object.keys(require.cache).filter((k) => k.includes('@nestjs')).length;
       require('rxjs-lock'); require('rxjs-lock/redis'); require('rxjs-lock/testing');
       console.log('core loads nest:', loadedNest());
       (async () => {
       ${nestApp(`require('reflect-metadata');
       const { Controller, Get, Module } = require('@nestjs/common');
       const { NestFactory } = require('@nestjs/core');
       const { MemoryLockStore } = require('rxjs-lock');
       const { LockModule, WithLock, LOCKER } = require('rxjs-lock/nestjs');`)}
       })();`,
    );
    expect(out).toBe('core loads nest: 0\n200 paid 400 symbol');
  });

  it('loads rxjs-lock/otel as ESM and as CommonJS; no other entry point loads OpenTelemetry', () => {
    const esm = run(
      'otel-esm.mjs',
      `import { createLocker } from 'rxjs-lock';
       import { instrumentLocker } from 'rxjs-lock/otel';
       const locker = createLocker();
       const instrumentation = instrumentLocker(locker);
       instrumentation.stop();
       await locker.close();
       console.log(typeof instrumentLocker);`,
    );
    expect(esm).toBe('function');
    const cjs = run(
      'otel-cjs.cjs',
      `const loadedOtel = () => Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')).length;
       require('rxjs-lock'); require('rxjs-lock/redis'); require('rxjs-lock/testing'); require('rxjs-lock/nestjs');
       const before = loadedOtel();
       const { instrumentLocker } = require('rxjs-lock/otel');
       console.log(before, typeof instrumentLocker, loadedOtel() > 0);`,
    );
    expect(cjs).toBe('0 function true');
  });

  it('installs the rxjs-lock command (package.json bin): it runs from the build and explains itself', () => {
    const { bin } = JSON.parse(readFileSync(join(consumer, 'node_modules', 'rxjs-lock', 'package.json'), 'utf8')) as { bin: Record<string, string> };
    const command = join(consumer, 'node_modules', 'rxjs-lock', bin['rxjs-lock']!);
    expect(readFileSync(command, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const out = execFileSync(process.execPath, [command, '--help'], { cwd: consumer, encoding: 'utf8' });
    expect(out).toMatch(/^Usage: rxjs-lock inspect <redis-url> \[pattern\]/);
  });

  for (const [module, moduleResolution] of [
    ['NodeNext', 'NodeNext'],
    ['CommonJS', 'Node10'],
    ['ESNext', 'Bundler'],
  ] as const) {
    it(`gives types to every entry point under moduleResolution ${moduleResolution}`, () => {
      writeFileSync(
        join(consumer, 'types.ts'),
        `import { createLocker, type Lease, type LockEvent } from 'rxjs-lock';
         import { RedisLockStore } from 'rxjs-lock/redis';
         import { findOverlaps, type CriticalSection } from 'rxjs-lock/testing';
         import { LockModule, WithLock, type LockModuleOptions } from 'rxjs-lock/nestjs';
         import { instrumentLocker, type InstrumentLockerOptions } from 'rxjs-lock/otel';
         export const otel: [typeof instrumentLocker, InstrumentLockerOptions | undefined] = [instrumentLocker, undefined];
         export const nest: [typeof LockModule, typeof WithLock, LockModuleOptions | undefined] = [LockModule, WithLock, undefined];
         export const used: [typeof createLocker, Lease | undefined, LockEvent | undefined, typeof RedisLockStore, typeof findOverlaps, CriticalSection | undefined] = [createLocker, undefined, undefined, RedisLockStore, findOverlaps, undefined];`,
      );
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      const args = [
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--types',
        'node',
        '--module',
        module,
        '--moduleResolution',
        moduleResolution,
        join(consumer, 'types.ts'),
      ];
      expect(() => execFileSync(process.execPath, [tsc, ...args], { cwd: consumer, encoding: 'utf8', stdio: 'pipe' })).not.toThrow();
    });
  }
});
