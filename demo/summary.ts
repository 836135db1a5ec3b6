/**
 * Turns what the workers and Redis report into the demo's closing numbers, and prints them.
 * Pure functions apart from `printSummary`, so the arithmetic is easy to check by eye.
 */
import { findOverlaps, type CriticalSection, type Overlap } from '../src/testing.js';
import type { WorkerReport } from './protocol.js';

export interface RunShape {
  readonly workers: number;
  readonly loops: number;
}

export interface CommandCount {
  readonly name: string;
  readonly calls: number;
}

export interface RunSummary extends RunShape {
  /** From `go` to the last critical section's exit. */
  readonly seconds: number;
  readonly acquisitions: number;
  /** Acquisitions of each process, in worker order. */
  readonly perProcess: readonly number[];
  readonly timeouts: number;
  readonly overlaps: readonly Overlap[];
  /** Lock traffic as Redis counts it (including commands run inside Lua scripts), busiest first. */
  readonly commands: readonly CommandCount[];
  /** Commands the stores sent: the round trips. */
  readonly storeCommands: number;
  readonly waitMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

/**
 * Commands the demo itself sends to read and reset the statistics or to hang up, which say
 * nothing about the cost of a lock.
 */
const HOUSEKEEPING = new Set(['info', 'config', 'quit']);

/** `calls` per command from `INFO commandstats`, lock traffic only (subcommands folded in). */
export function parseCommandStats(info: string): CommandCount[] {
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:|]+)(?:\|[^:]*)?:calls=(\d+)/gm)) {
    const name = match[1]!;
    if (!HOUSEKEEPING.has(name)) calls.set(name, (calls.get(name) ?? 0) + Number(match[2]));
  }
  return [...calls].map(([name, count]) => ({ name, calls: count })).sort((a, b) => b.calls - a.calls);
}

/** Sections as the parent rebuilds them: bigints again, tagged with the process that ran them. */
export function sectionsOf(report: WorkerReport, owner: string): CriticalSection[] {
  return report.sections.map(([enter, exit]) => ({ enter: BigInt(enter), exit: BigInt(exit), owner }));
}

const sum = (values: readonly number[]): number => values.reduce((total, n) => total + n, 0);

/** Nearest-rank percentile of an ascending array (0 when empty). */
export function percentile(ascending: readonly number[], p: number): number {
  if (ascending.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(p * ascending.length));
  return ascending[rank - 1]!;
}

export function summarize(shape: RunShape, reports: readonly WorkerReport[], commands: CommandCount[], startNs: bigint): RunSummary {
  const sections = reports.flatMap((report, i) => sectionsOf(report, `process ${i + 1}`));
  const lastExit = sections.reduce((latest, s) => (s.exit > latest ? s.exit : latest), startNs);
  const waits = reports.flatMap((r) => r.waitsMs).sort((a, b) => a - b);
  return {
    workers: shape.workers,
    loops: shape.loops,
    seconds: Number(lastExit - startNs) / 1e9,
    acquisitions: sections.length,
    perProcess: reports.map((r) => r.sections.length),
    timeouts: sum(reports.map((r) => r.timeouts)),
    storeCommands: sum(reports.map((r) => r.storeCommands)),
    overlaps: findOverlaps(sections),
    commands,
    waitMs: { p50: percentile(waits, 0.5), p99: percentile(waits, 0.99), max: waits.at(-1) ?? 0 },
  };
}

export const formatInt = (n: number): string => Math.round(n).toLocaleString('en-US');
const formatMs = (ms: number): string => `${ms.toFixed(1)} ms`;
const formatShare = (part: number, whole: number): string => `${whole === 0 ? 0 : Math.round((100 * part) / whole)}%`;
export const perSecond = (n: number, seconds: number): string => formatInt(seconds > 0 ? n / seconds : 0);
const perAcquisition = (n: number, acquisitions: number): string => (acquisitions === 0 ? '-' : (n / acquisitions).toFixed(2));

/** One labelled line of the summary; continuation lines line up under the value column. */
const LABEL_WIDTH = 20;
const line = (label: string, value: string): string => `  ${label.padEnd(LABEL_WIDTH)}${value}`;
const continuation = (value: string): string => line('', value);

function commandLines(s: RunSummary): string[] {
  const total = sum(s.commands.map((c) => c.calls));
  const nameWidth = Math.max(...s.commands.map((c) => c.name.length), 0);
  const callsWidth = formatInt(Math.max(...s.commands.map((c) => c.calls), 0)).length;
  return [
    line('Redis commands', `${perAcquisition(total, s.acquisitions)} per acquisition (${formatInt(total)} calls)`),
    ...s.commands.map((c) =>
      continuation(`  ${c.name.padEnd(nameWidth)}  ${formatInt(c.calls).padStart(callsWidth)}  ${perAcquisition(c.calls, s.acquisitions)}/acquisition`),
    ),
    line('round trips', `${perAcquisition(s.storeCommands, s.acquisitions)} per acquisition (commands sent; the rest ran inside Lua scripts)`),
  ];
}

/** A few overlapping pairs, enough to see who collided and by how much. */
function overlapLines(overlaps: readonly Overlap[]): string[] {
  return overlaps.slice(0, 3).map(({ first, second }) => {
    const byMs = Number(first.exit - second.enter) / 1e6;
    return continuation(`  ${second.owner} entered ${byMs.toFixed(3)} ms before ${first.owner} exited`);
  });
}

export function formatSummary(s: RunSummary): string[] {
  const shares = s.perProcess.map((n, i) => `#${i + 1} ${formatShare(n, s.acquisitions)}`).join('  ');
  const verdict = s.overlaps.length === 0 ? '(no two critical sections ever ran at once)' : 'MUTUAL EXCLUSION VIOLATED';
  return [
    'Summary',
    line('processes × loops', `${s.workers} × ${s.loops}`),
    line('acquisitions', `${formatInt(s.acquisitions)} in ${s.seconds.toFixed(1)} s  (${perSecond(s.acquisitions, s.seconds)}/s)`),
    line('timeouts', formatInt(s.timeouts)),
    line('overlaps', `${formatInt(s.overlaps.length)}  ${verdict}`),
    ...overlapLines(s.overlaps),
    ...commandLines(s),
    line('wait for the lock', `p50 ${formatMs(s.waitMs.p50)}  p99 ${formatMs(s.waitMs.p99)}  max ${formatMs(s.waitMs.max)}`),
    line('share per process', shares),
  ];
}

export function printSummary(s: RunSummary): void {
  console.log(['', ...formatSummary(s)].join('\n'));
}
