/**
 * The ideal of hot-key-1ms's turns, with no lock: P processes × L loops; a turn goes round the
 * processes over pub/sub, and in its turn a process gives each of its loops one hold (a 1 ms
 * timer, as the scenario's hold) one after another, then publishes the turn to the next process.
 * Every loop records its wait: from the end of its hold to the start of its next one. What the
 * machine charges a perfectly fair, batching lock; compare its max wait with the scenario's.
 *
 * Env: PORT (a Redis of your own, e.g. `taskset -c 1 redis-server --port 6391 --save ''`; run this
 * with `taskset -c 0`), P (default 8), L (default 4), SECS (default 10), CUT (ms left out at the
 * start, default 1000), HOLD (ms, default 1).
 *
 * Run: `PORT=6391 taskset -c 0 npx tsx bench/diagnostics/holdRing.ts`
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const PORT = Number(process.env.PORT);
const PROCESSES = Number(process.env.P ?? 8);
const LOOPS = Number(process.env.L ?? 4);
const SECONDS = Number(process.env.SECS ?? 10);
const CUT = Number(process.env.CUT ?? 1000);
const HOLD = Number(process.env.HOLD ?? 1);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

async function child(index: number): Promise<void> {
  const cmd = new Redis({ port: PORT });
  const sub = new Redis({ port: PORT });
  const channel = (w: number) => `ring:${w}`;
  await sub.subscribe(channel(index));
  process.send?.('ready');
  const go = await new Promise<{ start: number }>((resolve) => process.once('message', (m) => resolve(m as { start: number })));
  const end = go.start + SECONDS * 1000;
  const recordFrom = go.start + CUT;
  const lastRelease: (number | undefined)[] = Array.from({ length: LOOPS }, () => undefined);
  const waits: number[] = [];
  let holds = 0;
  const turn = async () => {
    for (let loop = 0; loop < LOOPS; loop++) {
      const begin = nowMs();
      const released = lastRelease[loop];
      if (released !== undefined && released >= recordFrom) waits.push(begin - released);
      await new Promise((resolve) => setTimeout(resolve, HOLD));
      lastRelease[loop] = nowMs();
      holds++;
    }
    if (nowMs() < end) await cmd.publish(channel((index + 1) % PROCESSES), 'turn');
  };
  sub.on('message', () => void turn());
  if (index === 0) {
    while (nowMs() < go.start) await new Promise((r) => setTimeout(r, 1));
    void turn();
  }
  while (nowMs() < end + 200) await new Promise((r) => setTimeout(r, 50));
  waits.sort((a, b) => a - b);
  process.send?.({ waits, holds }, () => process.exit(0));
}

async function parent(): Promise<void> {
  const children = Array.from({ length: PROCESSES }, (_, i) =>
    fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, HOLD_RING_CHILD: String(i) }, execArgv: ['--import', 'tsx'] }),
  );
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const start = nowMs() + 200;
  const outcomes = await Promise.all(
    children.map(
      (c) =>
        new Promise<{ waits: number[]; holds: number }>((resolve) => {
          c.once('message', (m) => resolve(m as { waits: number[]; holds: number }));
          c.send({ start });
        }),
    ),
  );
  const waits = outcomes.flatMap((o) => o.waits).sort((a, b) => a - b);
  const holds = outcomes.reduce((s, o) => s + o.holds, 0);
  const q = (p: number) => waits[Math.min(waits.length - 1, Math.floor(p * waits.length))]!.toFixed(1);
  console.log(
    `ring: ${(holds / SECONDS).toFixed(0)} holds/s, wait p50 ${q(0.5)} p99 ${q(0.99)} max ${waits[waits.length - 1]!.toFixed(1)} ms (after ${CUT} ms, ${waits.length} waits)`,
  );
}

if (process.env.HOLD_RING_CHILD !== undefined) await child(Number(process.env.HOLD_RING_CHILD));
else await parent();
