/**
 * Where a cross-process hand-off's time goes (a diagnostic, not part of `npm run bench`).
 *
 *   npm run build && node --import tsx bench/diagnostics/handoffLegs.ts [processes=8] [loops=4] [seconds=6]
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
}

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
  const report: WorkerReport = { held: [], grants: [], releases: [] };
  subscriber.on('message', (_channel: string, message: string) => {
    // 'granted <token> …' (see the release script)
    if (message.startsWith('granted ')) report.grants.push([process.hrtime.bigint().toString(), message.split(' ')[1]!]);
  });
  const send = redis.sendCommand.bind(redis);
  // The release script's call: [sha, 4 keys' count, 4 keys, token, last fence or 'passed'] (7 or 8
  // arguments; an acquire has at least 9). The token is the 7th.
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    if ((command.name === 'evalsha' || command.name === 'eval') && (command.args.length === 7 || command.args.length === 8)) {
      report.releases.push([process.hrtime.bigint().toString(), String(command.args[6])]);
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
  }
  console.log(
    `${processes} processes × ${loops} loops, ${seconds} s${pinning ? `, workers on CPU ${pinning.clientCpu}, Redis on CPU ${pinning.redisCpu}` : ', not pinned'}`,
  );
  console.log(`cross-process hand-offs ${total.length}: p50 ${p(total, 0.5)} ms, p90 ${p(total, 0.9)} ms`);
  console.log(`  by a grant message ${legs.sentToMessage.length}:`);
  for (const [name, values] of Object.entries(legs)) console.log(`    ${name.padEnd(15)} p50 ${p(values, 0.5)} ms, p90 ${p(values, 0.9)} ms`);
}

if (process.argv[2] === 'worker') await worker();
else await main();
