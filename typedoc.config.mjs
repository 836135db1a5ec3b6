// TypeDoc: the API reference of every entry point, written as markdown into docs/api for the
// VitePress site (npm run docs). Warnings fail the build: an undocumented export, a broken
// {@link}, or a public signature that names a type the reference does not show.
/** @type {Partial<import('typedoc').TypeDocOptions & import('typedoc-plugin-markdown').PluginOptions>} */
export default {
  entryPoints: ['src/index.ts', 'src/redis.ts', 'src/testing.ts', 'src/nestjs.ts', 'src/otel.ts'],
  tsconfig: 'tsconfig.json',
  out: 'docs/api',
  plugin: ['typedoc-plugin-markdown', 'typedoc-vitepress-theme', './docs/.vitepress/typedoc/requireExamples.mjs'],
  readme: 'none',
  docsRoot: 'docs', // sidebar links relative to the site root (docs/)
  excludePrivate: true,
  excludeInternal: true,
  disableSources: true,
  treatWarningsAsErrors: true,
  validation: { notExported: true, invalidLink: true, invalidPath: true, rewrittenLink: true, notDocumented: true, unusedMergeModuleWith: true },
  // Types a public signature names that users never build themselves: Nest's constructor
  // parameters (Nest injects them), and the grant the engine passes to a store's release (a custom
  // store can type it as `Parameters<LockStore['release']>[2]`).
  intentionallyNotExported: ['LockSettings', 'LockResources'],
  intentionallyNotDocumented: [
    // Fields of the store-protocol unions: each member's own comment says what its fields mean.
    ...['granted', 'fence', 'fences', 'ttl'].map((field) => `rxjs-lock.LeaveResult.__type.${field}`),
    ...['type', 'token', 'fence', 'fences', 'waiting', 'at', 'ttl'].map((field) => `rxjs-lock.WakeSignal.__type.${field}`),
    // The slices of ioredis' own API that the Redis stores call: ioredis documents them.
    ...['listenerCount', 'removeListener', ...['host', 'keyPrefix', 'name', 'path', 'port', 'sentinels'].map((o) => `options.__type.${o}`)].map(
      (member) => `rxjs-lock/redis.QuorumClient.${member}`,
    ),
    'rxjs-lock/redis.RedisClient.options.__type.keyPrefix',
    'rxjs-lock/redis.RedisPipeline.exec',
    ...['disconnect', 'on', 'subscribe', 'unsubscribe'].map((m) => `rxjs-lock/redis.RedisSubscriber.${m}`),
    ...['exec', 'get', 'hdel', 'hget', 'pttl', 'zrem'].map((m) => `rxjs-lock/redis.RedisTransaction.${m}`),
    'rxjs-lock/redis.ScanningClient.options.__type.keyPrefix',
    'rxjs-lock/redis.ScanningClient.scan',
    // Made by Nest's ConfigurableModuleBuilder; LockModule's own comment shows both.
    'rxjs-lock/nestjs.LockModule.forRoot',
    'rxjs-lock/nestjs.LockModule.forRootAsync',
  ],
};
