/**
 * How quiet the machine was during a run: the share of CPU time taken by processes that are not
 * the bench's own (its workers, its redis-server, itself), and the time the hypervisor stole.
 * From /proc (Linux); undefined elsewhere. On a shared 2-core machine this is what tells a
 * surprising number from a disturbed one.
 */
import { readFileSync } from 'node:fs';

export interface CpuSnapshot {
  /** Jiffies of all CPUs: busy (user, nice, system, irq, softirq), stolen, and in total. */
  readonly busy: number;
  readonly steal: number;
  readonly total: number;
  /** utime + stime of the bench's processes. */
  readonly ours: number;
}

export interface Noise {
  /** % of all CPU time used by other processes. */
  readonly otherCpuPct: number;
  /** % of all CPU time stolen by the hypervisor. */
  readonly stealPct: number;
}

function processJiffies(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is field 3, utime 14, stime 15 (1-based over the whole line).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return 0; // gone
  }
}

export function cpuSnapshot(pids: readonly number[]): CpuSnapshot | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [label, ...fields] = line.trim().split(/\s+/);
    if (label !== 'cpu') return undefined;
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields.map(Number);
    const busy = user + nice + system + irq + softirq;
    const ours = pids.reduce((sum, pid) => sum + processJiffies(pid), 0);
    return { busy, steal, total: busy + idle + iowait + steal, ours };
  } catch {
    return undefined;
  }
}

export function noiseBetween(before: CpuSnapshot | undefined, after: CpuSnapshot | undefined): Noise | undefined {
  if (!before || !after) return undefined;
  const total = after.total - before.total;
  if (total <= 0) return undefined;
  const other = Math.max(0, after.busy - before.busy - (after.ours - before.ours));
  return { otherCpuPct: Number(((100 * other) / total).toFixed(1)), stealPct: Number(((100 * (after.steal - before.steal)) / total).toFixed(1)) };
}
