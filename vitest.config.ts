import { defineConfig } from 'vitest/config';

// scripts/nest-compat.sh runs test/nestjs against another Nest major installed there.
const nestModules = process.env.NEST_MODULES;

export default defineConfig({
  // examples/ import the package by name, as a user would: run them on the sources.
  resolve: {
    alias: [
      { find: /^rxjs-lock$/, replacement: `${import.meta.dirname}/src/index.ts` },
      { find: /^rxjs-lock\/(nestjs|redis|testing|otel)$/, replacement: `${import.meta.dirname}/src/$1.ts` },
      ...(nestModules ? [{ find: /^@nestjs\/([^/]+)(.*)$/, replacement: `${nestModules}/@nestjs/$1$2` }] : []),
    ],
  },
  test: {
    // docs/examples: the documentation's samples that are tests themselves (the testing guide's).
    include: ['test/**/*.test.ts', 'docs/examples/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Each Redis suite starts its own servers; two workers match the machine's two cores.
    maxWorkers: 2,
    // The engine's state machines throw on an illegal move instead of refusing it.
    env: { RXJS_LOCK_STRICT: '1' },
  },
});
