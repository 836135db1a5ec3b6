/**
 * Counts the writes on a real ioredis connection's socket: each call of its `_write` or `_writev`
 * (what Node calls for each system call's worth of data), with the commands each carried.
 */
import type { Redis } from 'ioredis';

export interface Writes {
  /** Writes handed to the socket's `_write` or `_writev` so far. */
  readonly count: number;
  /** Commands in each of those writes, in order. */
  readonly sizes: number[];
}

/** Counts the writes on `client`'s socket (a wrapper around the socket's own methods). */
export function countWrites(client: Redis): Writes {
  const stream = client.stream as unknown as {
    _write: (chunk: unknown, encoding: unknown, done: unknown) => void;
    _writev: (chunks: unknown[], done: unknown) => void;
  };
  const sizes: number[] = [];
  const write = stream._write.bind(stream);
  const writev = stream._writev.bind(stream);
  stream._write = (chunk, encoding, done) => {
    sizes.push(1);
    write(chunk, encoding, done);
  };
  stream._writev = (chunks, done) => {
    sizes.push(chunks.length);
    writev(chunks, done);
  };
  return {
    get count() {
      return sizes.length;
    },
    sizes,
  };
}
