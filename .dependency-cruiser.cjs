/**
 * The layers of src/ and the only directions their imports may take (checked by `npm run
 * layers`, part of `npm test`):
 *
 *   entry points   src/index.ts, src/redis.ts, src/testing.ts     (anything below but integrations)
 *                  src/nestjs.ts                                  (the NestJS integration only)
 *                  src/otel.ts                                    (the OpenTelemetry integration only)
 *   integrations   src/integrations  framework glue (NestJS, OpenTelemetry): uses api, engine, errors,
 *                                 options, store and event types and the Redis store it may make;
 *                                 loads @nestjs/* or @opentelemetry/*
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
      comment: "The composition root chooses the in-memory default; Redis is the user's choice, from rxjs-lock/redis.",
      from: { path: '^src/api/' },
      to: { path: ['^src/backends/', '^src/testing/', '^src/[^/]+\\.ts$'], pathNot: '^src/backends/memory/' },
    },
    {
      name: 'the-core-entry-never-loads-redis',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/backends/redis/' },
    },
    {
      name: 'integrations-sit-above-the-api',
      severity: 'error',
      comment: 'Framework glue builds on the public layers (and makes a RedisLockStore from connection options), never on engine internals beyond the Locker.',
      from: { path: '^src/integrations/' },
      to: {
        path: '^src/',
        pathNot: [
          '^src/integrations/',
          '^src/api/',
          '^src/engine/Locker\\.ts$',
          '^src/engine/events/events\\.ts$',
          '^src/errors/',
          '^src/options/',
          '^src/store/',
          '^src/backends/redis/RedisLockStore\\.ts$',
          '^src/backends/redis/RedisClient\\.ts$',
        ],
      },
    },
    {
      name: 'integrations-use-only-store-types',
      severity: 'error',
      from: { path: '^src/integrations/' },
      to: { path: '^src/store/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'nothing-below-loads-integrations',
      severity: 'error',
      from: { path: '^src/(api|engine|store|backends|options|errors|testing)/' },
      to: { path: '^src/integrations/' },
    },
    {
      name: 'only-the-nestjs-entry-loads-the-nestjs-integration',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$', pathNot: '^src/nestjs\\.ts$' },
      to: { path: '^src/integrations/nestjs/' },
    },
    {
      name: 'integrations-use-only-event-types',
      severity: 'error',
      from: { path: '^src/integrations/' },
      to: { path: '^src/engine/events/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-otel-entry-loads-the-otel-integration',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$', pathNot: '^src/otel\\.ts$' },
      to: { path: '^src/integrations/otel/' },
    },
    {
      name: 'integrations-stay-apart',
      severity: 'error',
      comment: 'The NestJS and OpenTelemetry integrations never load each other (each has its own optional peers).',
      from: { path: '^src/integrations/([^/]+)/' },
      to: { path: '^src/integrations/', pathNot: '^src/integrations/$1/' },
    },
    {
      name: 'the-other-entries-never-reach-opentelemetry',
      severity: 'error',
      comment: 'Importing rxjs-lock, /redis, /testing or /nestjs must not load @opentelemetry/* (an optional peer), through any path.',
      from: { path: '^src/(index|redis|testing|nestjs)\\.ts$' },
      to: { path: ['^src/integrations/otel/', '(^|/)node_modules/@opentelemetry/', '^@opentelemetry/'], reachable: true },
    },
    {
      name: 'only-the-otel-integration-imports-opentelemetry',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/integrations/otel/' },
      to: { path: ['(^|/)node_modules/@opentelemetry/', '^@opentelemetry/'] },
    },
    {
      name: 'the-core-and-redis-entries-never-reach-nest',
      severity: 'error',
      comment: 'Importing rxjs-lock or rxjs-lock/redis must not load @nestjs/* (optional peers) nor the integrations, through any path.',
      from: { path: '^src/(index|redis|testing)\\.ts$' },
      to: { path: ['^src/integrations/', '(^|/)node_modules/@nestjs/', '^@nestjs/'], reachable: true },
    },
    {
      name: 'only-integrations-import-nest',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/integrations/' },
      to: { path: ['(^|/)node_modules/@nestjs/', '^@nestjs/'] },
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
