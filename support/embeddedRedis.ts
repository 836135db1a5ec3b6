/**
 * Starts private Redis servers for tests, the demo and benchmarks: `redis-memory-server` on the
 * machine's own `redis-server` binary (there is nothing to download here), each on a free port,
 * never the shared one on 6379. Fault tests pause (SIGSTOP/SIGCONT), kill and restart them.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { RedisMemoryServer } from 'redis-memory-server';

/** `REDISMS_SYSTEM_BINARY` if set, else the first `redis-server` on PATH. */
export function redisServerBinary(): string {
  const configured = process.env.REDISMS_SYSTEM_BINARY;
  if (configured) return configured;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin', '/usr/sbin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new Error('redis-server not found on PATH: install it (Debian: apt-get install redis-server) or set REDISMS_SYSTEM_BINARY');
}

export interface EmbeddedRedisOptions {
  /** Extra redis-server arguments. */
  args?: string[];
  /** Port to listen on. @default a free port */
  port?: number;
}

/** One private redis-server process. */
export class EmbeddedRedis {
  private constructor(
    private readonly server: RedisMemoryServer,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
    const systemBinary = redisServerBinary();
    process.env.REDISMS_SYSTEM_BINARY ??= systemBinary;
    const server = await RedisMemoryServer.create({
      binary: { systemBinary },
      instance: { ip: '127.0.0.1', args: options.args ?? [], ...(options.port === undefined ? {} : { port: options.port }) },
    });
    return new EmbeddedRedis(server, await server.getHost(), await server.getPort());
  }

  /** Process id of the running server. */
  get pid(): number {
    const info = this.server.getInstanceInfo();
    const pid = info ? info.childProcess?.pid : undefined;
    if (pid === undefined) throw new Error('redis-server is not running');
    return pid;
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void {
    process.kill(this.pid, 'SIGSTOP');
  }

  /** Thaws a paused server (SIGCONT). */
  resume(): void {
    process.kill(this.pid, 'SIGCONT');
  }

  /** Kills the server at once (SIGKILL), as a crash would; `restart()` brings it back, empty. */
  async kill(): Promise<void> {
    const child = (this.server.getInstanceInfo() || undefined)?.childProcess;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Starts a fresh server on the same port after `kill()` or `stop()`. */
  async restart(): Promise<void> {
    await this.server.stop().catch(() => undefined);
    await this.server.start();
  }

  async stop(): Promise<void> {
    await this.server.stop();
  }
}
