/**
 * Attack on the `rxjs-lock inspect` CLI's table: lock keys are often built from user input
 * (`order:${id}`), and the table is read by an operator in a terminal. A key with a newline must
 * not forge a row, and one with terminal control sequences (ESC) must not reach the terminal raw.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { NEVER, Subject, firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type Lease } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';

const suite = redisSuite();
const root = resolve(import.meta.dirname, '..', '..');

function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['--import', 'tsx', resolve(root, 'src/cli.ts'), ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('attack: hostile lock keys in the inspect table', () => {
  it('a key with a newline or an escape sequence is shown escaped, one row per lock; --json keeps the key exact', async () => {
    const client = connect(suite.server);
    const store = new RedisLockStore(client);
    const locker = createLocker({ store });
    suite.closers.push(async () => {
      await locker.close();
      store.close();
      client.disconnect();
    });
    const keys = ['order:1\nFORGED  not-a-token  99999  7  0', 'order:2\u001b[2J\u001b[31mred', 'order:3\ttab'];
    const got = new Subject<Lease>();
    for (const key of keys) {
      const held = locker.using(key, (lease) => (got.next(lease), NEVER), { ttl: 30_000 }).subscribe({ error: () => undefined });
      suite.closers.push(() => held.unsubscribe());
      await firstValueFrom(got);
    }
    const url = `redis://${suite.server.host}:${suite.server.port}`;
    const table = await cli('inspect', url);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1 + keys.length); // a header and one row per lock
    expect(table.stdout).not.toContain('\u001b');
    expect(table.stdout).not.toContain('\t');
    expect(lines.some((line) => line.startsWith('FORGED'))).toBe(false);
    expect(table.stdout).toContain('order:1\\nFORGED');

    const json = await cli('inspect', url, '--json');
    const listed = json.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { key: string }).key);
    expect(listed.sort()).toEqual([...keys].sort());
  }, 120_000);
});
