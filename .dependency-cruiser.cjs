/**
 * The layers of src/ and the only directions their imports may take (checked by `npm run
 * layers`, part of `npm test`):
 *
 *   entry points   src/index.ts, src/redis.ts, src/testing.ts     (anything below)
 *   api            src/api        createLocker (the composition root), free operators
 *   engine         src/engine     the lock engine
 *   store          src/store      the store contract (core + capabilities)
 *   backends       src/backends   implement the contract (memory, redis), never each other
 *   options        src/options    option types and validation (a leaf, but for the store's types)
 *   errors         src/errors     a leaf
 */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'No module may reach itself through its imports.', from: {}, to: { circular: true } },
    {
      name: 'errors-is-a-leaf',
      severity: 'error',
      from: { path: '^src/errors/' },
      to: { path: '^src/', pathNot: '^src/errors/' },
    },
    {
      name: 'options-is-a-leaf',
      severity: 'error',
      comment: 'Options import errors, and only the types of the store contract (LockerOptions.store).',
      from: { path: '^src/options/' },
      to: { path: '^src/', pathNot: ['^src/options/', '^src/errors/', '^src/store/'] },
    },
    {
      name: 'options-only-types-of-the-store',
      severity: 'error',
      from: { path: '^src/options/' },
      to: { path: '^src/store/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'store-contract-depends-on-nothing-above',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: ['^src/store/', '^src/errors/'] },
    },
    {
      name: 'engine-uses-the-contract-not-backends',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: ['^src/backends/', '^src/api/', '^src/testing/', '^src/[^/]+\\.ts$'] },
    },
    {
      name: 'backends-implement-the-contract',
      severity: 'error',
      comment: 'A backend knows the contract, options and errors: never the engine, the api, or another backend.',
      from: { path: '^src/backends/([^/]+)/' },
      to: { path: ['^src/engine/', '^src/api/', '^src/testing/', '^src/[^/]+\\.ts$', '^src/backends/'], pathNot: '^src/backends/$1/' },
    },
    {
      name: 'api-picks-only-the-memory-backend',
      severity: 'error',
      comment: 'The composition root chooses the in-memory default; Redis is the user\'s choice, from rxjs-lock/redis.',
      from: { path: '^src/api/' },
      to: { path: ['^src/backends/', '^src/testing/', '^src/[^/]+\\.ts$'], pathNot: '^src/backends/memory/' },
    },
    {
      name: 'the-core-entry-never-loads-redis',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/backends/redis/' },
    },
    { name: 'no-unresolvable', severity: 'error', from: {}, to: { couldNotResolve: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js'] },
  },
};
