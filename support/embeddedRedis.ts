/**
 * Starts private Redis servers for tests, the demo and benchmarks: `redis-memory-server` on the
 * machine's own `redis-server` binary (there is nothing to download here), each on a free port,
 * never the shared one on 6379. Fault tests pause (SIGSTOP/SIGCONT), kill and restart them.
 *
 * Each server works in a directory of its own (`--dir`, unless the arguments name one): redis-server
 * loads `dump.rdb` from its directory at start whatever `--save` says, and a replica writes one there
 * on every full sync — in a shared directory, one suite's snapshot was the data another suite's
 * "empty" server started from.
 */
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  /** Extra redis-server arguments. A `--dir` among them is used as is (and kept). */
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
    /** The directory this server was given, made for it (removed by `stop()`). */
    private readonly ownDir: string | undefined,
  ) {}

  static async start(options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
    const systemBinary = redisServerBinary();
    process.env.REDISMS_SYSTEM_BINARY ??= systemBinary;
    const args = options.args ?? [];
    const ownDir = args.includes('--dir') ? undefined : mkdtempSync(join(tmpdir(), 'rxjs-lock-redis-'));
    try {
      const server = await RedisMemoryServer.create({
        binary: { systemBinary },
        instance: {
          ip: '127.0.0.1',
          args: ownDir === undefined ? args : [...args, '--dir', ownDir],
          ...(options.port === undefined ? {} : { port: options.port }),
        },
      });
      return new EmbeddedRedis(server, await server.getHost(), await server.getPort(), ownDir);
    } catch (error) {
      if (ownDir !== undefined) rmSync(ownDir, { recursive: true, force: true });
      throw error;
    }
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

  /**
   * Starts a fresh server on the same port after `kill()` or `stop()`: empty, as a restart without
   * persistence is (a snapshot it saved in its own directory is gone).
   */
  async restart(): Promise<void> {
    await this.server.stop().catch(() => undefined);
    if (this.ownDir !== undefined) {
      rmSync(this.ownDir, { recursive: true, force: true });
      mkdirSync(this.ownDir);
    }
    await this.server.start();
  }

  async stop(): Promise<void> {
    try {
      await this.server.stop();
    } finally {
      if (this.ownDir !== undefined) rmSync(this.ownDir, { recursive: true, force: true });
    }
  }
}
