/**
 * @WithLock on a microservice handler (TCP transport): the key comes from the payload (a template,
 * or a key function's list of keys), and lock failures reach the caller as RpcException errors.
 */
import 'reflect-metadata';
import { createServer } from 'node:net';
import { Controller, type ExecutionContext, Inject } from '@nestjs/common';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { LockModule, WithLock } from '../../src/nestjs.js';
import { redisSuite } from '../support/redisSuite.js';
import { PROBE, Probe } from './fixtures/probe.js';

const suite = redisSuite();

@Controller()
class AccountsHandler {
  constructor(@Inject(PROBE) private readonly probe: Probe) {}

  @MessagePattern('credit')
  @WithLock('account:{data.account}', { waitTimeout: 0 })
  async credit(@Payload() data: { account: string; tag: string }): Promise<string> {
    this.probe.note('enter', `account:${data.account}`, 'rpc');
    await this.probe.gate(`${data.account}:${data.tag}`);
    return `credited ${data.tag}`;
  }

  /** A batch of transfers: every account it names, however many (a key function's list). */
  @MessagePattern('settle')
  @WithLock(
    (ctx: ExecutionContext) =>
      ctx
        .switchToRpc()
        .getData<{ accounts: string[] }>()
        .accounts.map((a) => `account:${a}`),
    { waitTimeout: 0 },
  )
  async settle(@Payload() data: { accounts: string[]; tag: string }): Promise<string> {
    this.probe.note('enter', `settle:${data.tag}`, 'rpc');
    await this.probe.gate(`settle:${data.tag}`);
    return `settled ${data.accounts.length}`;
  }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const failureOf = (reply: Promise<unknown>) =>
  reply.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('@WithLock on a microservice handler', () => {
  it('locks the key from the payload and answers busy and missing keys with RpcException errors', async () => {
    const probe = new Probe();
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: { host: suite.server.host, port: suite.server.port } })],
      controllers: [AccountsHandler],
      providers: [{ provide: PROBE, useValue: probe }],
    }).compile();
    const app = moduleRef.createNestMicroservice<MicroserviceOptions>({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    app.useLogger(false);
    await app.listen();
    const client: ClientProxy = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    suite.closers.push(async () => {
      probe.openAll();
      await client.close();
      await app.close();
    });

    const first = firstValueFrom(client.send<string>('credit', { account: '1', tag: 'first' }));
    await probe.waitFor('enter', 'account:1');
    expect(await suite.admin.exists('lock:account:1')).toBe(1);
    expect(await failureOf(firstValueFrom(client.send('credit', { account: '1', tag: 'second' })))).toMatchObject({
      status: 'error',
      code: 'LOCK_BUSY',
      statusCode: 409,
      message: expect.stringMatching(/account:1/),
    });
    expect(await failureOf(firstValueFrom(client.send('credit', { tag: 'no account' })))).toMatchObject({ code: 'LOCK_KEY_MISSING', statusCode: 400 });
    // a batch that names the busy account: refused at once, the others it took given back
    expect(await failureOf(firstValueFrom(client.send('settle', { accounts: ['0', '1'], tag: 'busy' })))).toMatchObject({ code: 'LOCK_BUSY', statusCode: 409 });
    expect(await suite.admin.exists('lock:account:0')).toBe(0);
    const batch = firstValueFrom(client.send<string>('settle', { accounts: ['2', '3', '4'], tag: 'b' }));
    await probe.waitFor('enter', 'settle:b');
    expect(await suite.admin.exists('lock:account:2', 'lock:account:3', 'lock:account:4')).toBe(3);
    probe.open('settle:b');
    expect(await batch).toBe('settled 3');
    probe.open('1:first');
    expect(await first).toBe('credited first');
    expect(await suite.admin.exists('lock:account:1', 'lock:account:2', 'lock:account:3', 'lock:account:4')).toBe(0);
    expect(probe.notes.filter((n) => n.what === 'enter')).toHaveLength(2);
  });
});
