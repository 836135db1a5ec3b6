/**
 * CPU pinning with `taskset`: Redis on one CPU, the client processes on another, so the two
 * sides do not take turns on one core and the scheduler does not move them mid-run. Silently
 * does nothing where taskset is missing, fails, or fewer than two CPUs are allowed.
 */
import { spawnSync } from 'node:child_process';

export interface Pinning {
  readonly redisCpu: number;
  readonly clientCpu: number;
}

/** Parses a Linux CPU list such as `0-3,6`. */
function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    const [from, to] = part.split('-').map((n) => Number(n));
    if (from === undefined || !Number.isInteger(from)) continue;
    const last = to !== undefined && Number.isInteger(to) ? to : from;
    for (let cpu = from; cpu <= last; cpu++) cpus.push(cpu);
  }
  return cpus;
}

/** The CPUs this process may run on, per taskset; undefined when taskset cannot tell. */
function allowedCpus(): number[] | undefined {
  try {
    const result = spawnSync('taskset', ['-p', '-c', String(process.pid)], { encoding: 'utf8' });
    if (result.status !== 0 || typeof result.stdout !== 'string') return undefined;
    const list = result.stdout.split(':').pop();
    return list === undefined ? undefined : parseCpuList(list);
  } catch {
    return undefined;
  }
}

/** Pins every thread of `pid` to `cpu`; false when that did not work. */
export function pinProcess(pid: number, cpu: number): boolean {
  try {
    return spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' }).status === 0;
  } catch {
    return false;
  }
}

/** Picks two CPUs and pins Redis to the second one; undefined when pinning is not available. */
export function pinRedis(redisPid: number): Pinning | undefined {
  if (process.env.BENCH_NO_PIN === '1') return undefined;
  const cpus = allowedCpus();
  if (cpus === undefined || cpus.length < 2) return undefined;
  const pinning = { clientCpu: cpus[0]!, redisCpu: cpus[1]! };
  return pinProcess(redisPid, pinning.redisCpu) ? pinning : undefined;
}
