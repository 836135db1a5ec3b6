/** A TCP proxy to a Redis server that holds back what Redis sends (a slow link, one way). */
import { createServer, connect as tcpConnect, type Socket } from 'node:net';

export interface DelayProxy {
  readonly port: number;
  /** What Redis sends is held back this long, in order (may be changed at any time). */
  delayMs: number;
  close(): Promise<void>;
}

/**
 * A proxy on 127.0.0.1 to the Redis on `targetPort` that delays everything Redis sends by
 * `delayMs`, in order; what the client sends goes through at once. Data still held back when
 * either side closes the connection is lost.
 */
export async function delayProxy(targetPort: number, delayMs: number): Promise<DelayProxy> {
  const proxy = { port: 0, delayMs, close: async () => undefined } as DelayProxy;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pump = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.at <= now) {
        const { chunk } = queue.shift()!;
        if (!client.destroyed) client.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(pump, Math.max(0, queue[0]!.at - now));
    };
    upstream.on('data', (chunk: Buffer) => {
      queue.push({ at: performance.now() + proxy.delayMs, chunk });
      if (timer === undefined) timer = setTimeout(pump, proxy.delayMs);
    });
    const end = () => {
      if (timer !== undefined) clearTimeout(timer);
      queue.length = 0;
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  Object.assign(proxy, {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
  return proxy;
}
