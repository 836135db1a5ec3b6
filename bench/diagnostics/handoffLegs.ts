/**
 * Where a cross-process hand-off's time goes (a diagnostic, not part of `npm run bench`).
 *
 *   node bench/.build/handoffLegs.mjs [processes=8] [loops=4] [seconds=6]   (built as below)
 *
 * The hot-key-0ms layout: `processes` worker processes with `loops` loops each, all on one key,
 * holding for one turn of the event loop; Redis pinned to its own CPU, the workers to another
 * (as the bench pins them). Each hand-off from one process to another is split into three legs,
 * on one clock (`process.hrtime.bigint()`, CLOCK_MONOTONIC, shared by the processes of a machine):
 *
 *   exit → sent       the holder's last moment → its release script handed to ioredis
 *   sent → message    → the grant message's callback in the waiter (Redis, PUBLISH, the waiter waking)
 *   message → enter   → the waiter's work starting (the waiter's engine)
 *
 * The store is given its own subscriber connection so that the grant messages can be timed, and
 * the holder's `sendCommand` is wrapped to time its release. Hand-offs are counted after a 1.5 s
 * warm-up. Compare the middle leg with the bench's floor row (a pub/sub hop between two workers).
 *
 * `DIAG_MONITOR=1` splits the middle leg on Redis's clock too, from a MONITOR connection of the
 * parent (which slows Redis down: compare runs with the same setting only):
 *
 *   sent → script     the release script handed to ioredis → Redis starting it
 *   script → publish  → the script's PUBLISH of the grant (its work before the hand-off)
 *   publish → message → the grant message's callback in the waiter (Redis flushing it, the waiter
 *                       waking, ioredis reading it)
 *
 * (Both sides read the wall clock there: Redis's MONITOR timestamps, `performance.timeOrigin +
 * performance.now()` in the workers.)
 *
 * Run it bundled, without the TypeScript loader: under `--import tsx` each worker also runs Node
 * 20's module-hooks thread, which polls with setImmediate for as long as the process lives once it
 * has served an import (internal/modules/esm/worker.js `checkForMessages`): 35–39 ms of the
 * client CPU per second per worker, measured, which the bench's own workers do not pay.
 *
 *   npm run build && npx esbuild bench/diagnostics/handoffLegs.ts --bundle --platform=node \
 *     --format=esm --packages=external --outfile=bench/.build/handoffLegs.mjs \
 *     && node bench/.build/handoffLegs.mjs 8 4 6
 *
 * (bench/.build/ is two folders deep, as this file is, so `../../dist` still names the build.)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import type * as Core from '../../src/index.js';
import type * as RedisEntry from '../../src/redis.js';
import { EmbeddedRedis } from '../../support/embeddedRedis.js';
import { pinProcess, pinRedis } from '../pinning.js';

interface Held {
  enter: string;
  exit: string;
  token: string;
}
interface WorkerReport {
  held: Held[];
  /** [time, token] of each grant message received. */
  grants: Array<[string, string]>;
  /** [time, token] of each release script sent. */
  releases: Array<[string, string]>;
  /** The same two, on the wall clock (ms since the epoch, µs resolution), for DIAG_MONITOR. */
  grantsAt: Array<[number, string]>;
  releasesAt: Array<[number, string]>;
}

/** The wall clock in ms with µs resolution, as Redis's MONITOR timestamps read it. */
const wallMs = (): number => performance.timeOrigin + performance.now();

const KEY = 'diagnostic:hot';

async function worker(): Promise<void> {
  const { createLocker } = (await import(new URL('../../dist/esm/index.js', import.meta.url).href)) as typeof Core;
  const { RedisLockStore } = (await import(new URL('../../dist/esm/redis.js', import.meta.url).href)) as typeof RedisEntry;
  const port = Number(process.env.DIAG_PORT);
  const loops = Number(process.env.DIAG_LOOPS);
  const ms = Number(process.env.DIAG_MS);
  const hold = Number(process.env.DIAG_HOLD_MS ?? '0');
  const redis = new Redis({ port });
  const subscriber = new Redis({ port, autoResubscribe: false });
  const report: WorkerReport = { held: [], grants: [], releases: [], grantsAt: [], releasesAt: [] };
  subscriber.on('message', (_channel: string, message: string) => {
    // 'granted <token> …' (see the release script)
    if (message.startsWith('granted ')) {
      const token = message.split(' ')[1]!;
      report.grants.push([process.hrtime.bigint().toString(), token]);
      report.grantsAt.push([wallMs(), token]);
    }
  });
  const send = redis.sendCommand.bind(redis);
  // The release script's call: [sha, 4 keys' count, 4 keys, token, last fence or 'passed'] (7 or 8
  // arguments; an acquire has at least 9). The token is the 7th.
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    if ((command.name === 'evalsha' || command.name === 'eval') && (command.args.length === 7 || command.args.length === 8)) {
      report.releases.push([process.hrtime.bigint().toString(), String(command.args[6])]);
      report.releasesAt.push([wallMs(), String(command.args[6])]);
    }
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  const store = new RedisLockStore(redis, { subscriber });
  const locker = createLocker({ store });
  await redis.ping();
  const go = new Promise((resolve) => process.once('message', resolve));
  process.send!('ready');
  await go;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < end) {
        const lease = await firstValueFrom(locker.acquire(KEY, { ttl: 10_000, waitTimeout: 10_000 }));
        const enter = process.hrtime.bigint();
        await (hold > 0 ? new Promise((resolve) => setTimeout(resolve, hold)) : new Promise(setImmediate));
        const exit = process.hrtime.bigint();
        report.held.push({ enter: enter.toString(), exit: exit.toString(), token: lease.token });
        await lease.release();
      }
    }),
  );
  await new Promise((resolve) => process.send!(report, resolve));
  await locker.close();
  store.close();
  redis.disconnect();
  subscriber.disconnect();
  process.exit(0);
}

const p = (values: number[], q: number): string => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 'n/a' : sorted[Math.floor(q * (sorted.length - 1))]!.toFixed(3);
};

async function main(): Promise<void> {
  const [processes = 8, loops = 4, seconds = 6] = process.argv.slice(2).map(Number);
  const server = await EmbeddedRedis.start();
  const pinning = pinRedis(server.pid);
  const onRedis = process.env.DIAG_MONITOR === '1' ? await watchOnRedis(server.port) : undefined;
  const children: ChildProcess[] = [];
  const ready: Array<Promise<unknown>> = [];
  const reported: Array<Promise<WorkerReport & { id: number }>> = [];
  for (let id = 0; id < processes; id++) {
    const child = fork(fileURLToPath(import.meta.url), ['worker'], {
      env: { ...process.env, DIAG_PORT: String(server.port), DIAG_LOOPS: String(loops), DIAG_MS: String(seconds * 1000) },
    });
    if (pinning && child.pid !== undefined) pinProcess(child.pid, pinning.clientCpu);
    children.push(child);
    // first 'ready' (connected), then the report
    ready.push(new Promise((resolve) => child.once('message', resolve)));
    reported.push(ready[id]!.then(() => new Promise((resolve) => child.once('message', (r) => resolve({ ...(r as WorkerReport), id })))));
  }
  await Promise.all(ready);
  for (const child of children) child.send('go');
  const reports = await Promise.all(reported);
  onRedis?.close();
  await server.stop();

  const held = reports
    .flatMap((r) => r.held.map((h) => ({ enter: BigInt(h.enter), exit: BigInt(h.exit), token: h.token, id: r.id })))
    .sort((a, b) => (a.enter < b.enter ? -1 : 1));
  const grantAt = new Map(reports.flatMap((r) => r.grants.map(([t, token]) => [token, BigInt(t)] as const)));
  const releaseAt = new Map(reports.flatMap((r) => r.releases.map(([t, token]) => [token, BigInt(t)] as const)));
  const warm = held[0]!.enter + 1_500_000_000n;
  const total: number[] = [];
  const legs = { exitToSent: [] as number[], sentToMessage: [] as number[], messageToEnter: [] as number[] };
  const ms = (a: bigint, b: bigint) => Number(b - a) / 1e6;
  const releaseWall = new Map(reports.flatMap((r) => r.releasesAt.map(([t, token]) => [token, t] as const)));
  const grantWall = new Map(reports.flatMap((r) => r.grantsAt.map(([t, token]) => [token, t] as const)));
  const onRedisLegs = { sentToScript: [] as number[], scriptToPublish: [] as number[], publishToMessage: [] as number[] };
  for (let i = 1; i < held.length; i++) {
    const previous = held[i - 1]!;
    const next = held[i]!;
    if (next.enter < warm || previous.id === next.id) continue;
    total.push(ms(previous.exit, next.enter));
    const message = grantAt.get(next.token);
    const sent = releaseAt.get(previous.token);
    if (message === undefined || sent === undefined || !(previous.exit <= sent && sent < message && message < next.enter)) continue;
    legs.exitToSent.push(ms(previous.exit, sent));
    legs.sentToMessage.push(ms(sent, message));
    legs.messageToEnter.push(ms(message, next.enter));
    if (onRedis !== undefined) {
      const scriptAt = onRedis.releaseStarts.get(previous.token);
      const publishAt = onRedis.grantPublishes.get(next.token);
      const sentAt = releaseWall.get(previous.token);
      const messageAt = grantWall.get(next.token);
      if (scriptAt === undefined || publishAt === undefined || sentAt === undefined || messageAt === undefined) continue;
      onRedisLegs.sentToScript.push(scriptAt - sentAt);
      onRedisLegs.scriptToPublish.push(publishAt - scriptAt);
      onRedisLegs.publishToMessage.push(messageAt - publishAt);
    }
  }
  console.log(
    `${processes} processes × ${loops} loops, ${seconds} s${pinning ? `, workers on CPU ${pinning.clientCpu}, Redis on CPU ${pinning.redisCpu}` : ', not pinned'}`,
  );
  console.log(`cross-process hand-offs ${total.length}: p50 ${p(total, 0.5)} ms, p90 ${p(total, 0.9)} ms`);
  console.log(`  by a grant message ${legs.sentToMessage.length}:`);
  for (const [name, values] of Object.entries(legs)) console.log(`    ${name.padEnd(16)} p50 ${p(values, 0.5)} ms, p90 ${p(values, 0.9)} ms`);
  if (onRedis === undefined) return;
  console.log(`  the middle leg on Redis's clock (MONITOR on: Redis is slower), ${onRedisLegs.sentToScript.length} hand-offs:`);
  for (const [name, values] of Object.entries(onRedisLegs)) console.log(`    ${name.padEnd(16)} p50 ${p(values, 0.5)} ms, p90 ${p(values, 0.9)} ms`);
}

/**
 * A MONITOR connection that notes, on Redis's clock (ms since the epoch), when each release script
 * started (by the holder's token) and when each grant was published (by the waiter's token).
 */
async function watchOnRedis(port: number): Promise<{ close(): void; releaseStarts: Map<string, number>; grantPublishes: Map<string, number> }> {
  const releaseStarts = new Map<string, number>();
  const grantPublishes = new Map<string, number>();
  const client = new Redis({ port });
  const monitor = await client.monitor();
  monitor.on('monitor', (time: string, args: string[]) => {
    // the release script: evalsha, its SHA, 4, four keys, the token[, the last fence] (see the worker)
    if (args[0]?.toLowerCase() === 'evalsha' && (args.length === 8 || args.length === 9)) releaseStarts.set(args[7]!, Number(time) * 1000);
    // inside it: PUBLISH <inbox> 'granted <token> …'
    else if (args[0] === 'PUBLISH' && args[2]?.startsWith('granted ')) grantPublishes.set(args[2].split(' ')[1]!, Number(time) * 1000);
  });
  const close = (): void => {
    monitor.disconnect();
    client.disconnect();
  };
  return { close, releaseStarts, grantPublishes };
}

if (process.argv[2] === 'worker') await worker();
else await main();
