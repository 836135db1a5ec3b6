#!/usr/bin/env node
/**
 * The `rxjs-lock` command (package.json `bin`). One subcommand:
 *
 *   rxjs-lock inspect <redis-url> [pattern] [--prefix <keyPrefix>] [--cluster] [--json]
 *
 * lists the locks held in that Redis whose key (as the locker names it, after `--prefix`, default
 * `lock:`) matches the glob `pattern` (default `*`): key, holder token, remaining TTL, fence (when
 * Redis keeps it) and waiters in line; then the shared locks (semaphores, read-write locks) with a
 * row per holder: its token, permits (`write` for a write lock), TTL and fence, and the key's
 * permits used and waiters. Read-only (SCAN and reads; see backends/redis/scanLocks.ts and
 * scanSharedLocks.ts). Needs `ioredis`, the store's peer dependency.
 */
import { scanLocks, type ListedLock, type ScanningClient } from './backends/redis/scanLocks.js';
import { scanSharedLocks, type ListedSharedLock } from './backends/redis/scanSharedLocks.js';
import { WRITE_PERMITS } from './engine/shared/readWrite.js';

const USAGE = `Usage: rxjs-lock inspect <redis-url> [pattern] [--prefix <keyPrefix>] [--cluster] [--json]

Lists held locks whose key matches the glob pattern (default "*"):
holder token, remaining TTL, fence (when Redis keeps it) and waiters;
then shared locks (semaphores, read-write locks), a row per holder:
token, permits ("write" for a write lock), TTL, fence, permits used, waiters.

  <redis-url>         redis://[user:password@]host:port[/db] (rediss:// for TLS)
  --prefix <p>        the locker's keyPrefix (default "lock:")
  --client-prefix <p> the ioredis keyPrefix of your application's clients, if any
  --cluster           the URL is a node of a Redis Cluster: every master is scanned
  --json              one JSON object per lock instead of a table
                      (a shared lock's has "kind": "shared" and its "holders")

In the table, control characters in keys and tokens are shown escaped
(\\n, \\t, \\u001b, and \\\\ for a backslash); --json gives them exactly.`;

interface Args {
  url: string;
  pattern: string;
  prefix: string;
  clientPrefix: string;
  cluster: boolean;
  json: boolean;
}

/** The command line as {@link Args}, or a usage error's message. */
export function parseArgs(argv: readonly string[]): Args | string {
  const positional: string[] = [];
  let prefix = 'lock:';
  let clientPrefix = '';
  let cluster = false;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--prefix' || arg === '--client-prefix') {
      const value = argv[++i];
      if (value === undefined) return `${arg} needs a value`;
      if (arg === '--prefix') prefix = value;
      else clientPrefix = value;
    } else if (arg.startsWith('--prefix=')) prefix = arg.slice('--prefix='.length);
    else if (arg.startsWith('--client-prefix=')) clientPrefix = arg.slice('--client-prefix='.length);
    else if (arg === '--cluster') cluster = true;
    else if (arg === '--json') json = true;
    else if (arg.startsWith('--')) return `unknown option ${arg}`;
    else positional.push(arg);
  }
  const [command, url, pattern = '*', ...extra] = positional;
  if (command !== 'inspect') return command === undefined ? 'missing command' : `unknown command ${command}`;
  if (url === undefined) return 'missing <redis-url>';
  if (!/^rediss?:\/\//.test(url)) return `not a redis:// or rediss:// URL: ${url}`;
  if (extra.length > 0) return `unexpected argument ${extra[0]}`;
  return { url, pattern, prefix, clientPrefix, cluster, json };
}

/**
 * Characters a terminal does not print as themselves: C0 and C1 controls (a newline would forge a
 * row, an ESC sequence would drive the operator's terminal), line and paragraph separators, bidi
 * overrides and isolates (they reorder what is shown), and the backslash that escapes them.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\\]/g;
const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

/** `text` with what a terminal would not show as itself escaped (`\n`, `\u001b`, `\\`): lock keys often carry user input. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The locks as a table, or a line saying there is none (keys and tokens made {@link printable}). */
export function formatTable(locks: readonly ListedLock[]): string {
  if (locks.length === 0) return 'no held locks match';
  const rows = [
    ['KEY', 'HOLDER TOKEN', 'TTL (ms)', 'FENCE', 'WAITING'],
    ...locks.map((l) => [printable(l.key), printable(l.token), String(l.ttl), l.fence === undefined ? '-' : String(l.fence), String(l.waiting)]),
  ];
  return columns(rows);
}

/** The shared locks as a table, a row per holder (or one for a lock with waiters only), keys and tokens made {@link printable}. */
export function formatSharedTable(locks: readonly ListedSharedLock[]): string {
  const rows = [['SHARED KEY', 'HOLDER TOKEN', 'PERMITS', 'TTL (ms)', 'FENCE', 'USED', 'WAITING']];
  for (const l of locks) {
    const lock = [String(l.used), String(l.waiting)];
    if (l.holders.length === 0) rows.push([printable(l.key), '-', '-', '-', '-', ...lock]);
    for (const h of l.holders)
      rows.push([printable(l.key), printable(h.token), h.weight >= WRITE_PERMITS ? 'write' : String(h.weight), String(h.ttl), String(h.fence), ...lock]);
  }
  return columns(rows);
}

/** The rows with each column padded to its widest cell. */
function columns(rows: readonly string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`rxjs-lock: ${args}\n\n${USAGE}\n`);
    return 2;
  }
  let ioredis: Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>;
  try {
    ioredis = await import('ioredis');
  } catch {
    process.stderr.write('rxjs-lock: inspect needs ioredis (npm install ioredis)\n');
    return 1;
  }
  const options = { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000, retryStrategy: () => null };
  const client = args.cluster
    ? new ioredis.Cluster([args.url], { lazyConnect: true, clusterRetryStrategy: () => null, redisOptions: options })
    : new ioredis.Redis(args.url, options);
  // ioredis reports connection errors as events too: keep the first, it says more than "closed"
  let connectionError: Error | undefined;
  client.on('error', (error: Error) => (connectionError ??= error));
  try {
    await client.connect();
    const scanning = client as unknown as ScanningClient;
    const scan = { pattern: args.pattern, keyPrefix: args.prefix, clientPrefix: args.clientPrefix };
    const locks: ListedLock[] = [];
    for await (const lock of scanLocks(scanning, scan)) {
      if (args.json) process.stdout.write(`${JSON.stringify(lock)}\n`);
      else locks.push(lock);
    }
    const shared: ListedSharedLock[] = [];
    for await (const lock of scanSharedLocks(scanning, scan)) {
      if (args.json) process.stdout.write(`${JSON.stringify({ kind: 'shared', ...lock })}\n`);
      else shared.push(lock);
    }
    if (!args.json) {
      // (the mutexes' table as before; the shared locks' below it, only when there are some)
      const tables = locks.length > 0 || shared.length === 0 ? [formatTable(locks.sort(byKey))] : [];
      if (shared.length > 0) tables.push(formatSharedTable(shared.sort(byKey)));
      process.stdout.write(`${tables.join('\n\n')}\n`);
    }
    return 0;
  } catch (error) {
    const reason = connectionError ?? error;
    process.stderr.write(`rxjs-lock: ${reason instanceof Error ? reason.message : String(reason)}\n`);
    return 1;
  } finally {
    client.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`rxjs-lock: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
