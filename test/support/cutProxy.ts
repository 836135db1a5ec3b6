/**
 * A TCP proxy to a Redis server whose connections the test can cut all at once (a dropped link),
 * and that can lose a command on its way (Redis never gets it, so it is never answered).
 */
import { createServer, connect as tcpConnect, type Socket } from 'node:net';

export interface CutProxy {
  readonly port: number;
  /** Cuts every connection now; the clients reconnect through the proxy. */
  cutAll(): void;
  /**
   * Loses what the next client to send `command` (a RESP command name, any case) sends with it:
   * Redis never gets it, the connection stays up. Resolves once it did.
   */
  loseNext(command: string): Promise<void>;
  close(): Promise<void>;
}

/** A proxy on 127.0.0.1 to the Redis on `targetPort`. */
export async function cutProxy(targetPort: number): Promise<CutProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let armed: { pattern: RegExp; done: () => void } | undefined;
  const server = createServer((client) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('data', (chunk: Buffer) => {
      const lose = armed;
      if (lose?.pattern.test(chunk.toString('latin1'))) {
        armed = undefined;
        lose.done();
        return;
      }
      if (!upstream.destroyed) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!client.destroyed) client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const cutAll = () => {
    for (const { client, upstream } of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    cutAll,
    loseNext: (command) =>
      new Promise<void>((resolve) => {
        // a RESP bulk string: $<length>\r\n<name>\r\n
        armed = { pattern: new RegExp(`\\$${command.length}\\r\\n${command}\\r\\n`, 'i'), done: resolve };
      }),
    close: () =>
      new Promise<void>((resolve) => {
        armed = undefined;
        cutAll();
        server.close(() => resolve());
      }),
  };
}
