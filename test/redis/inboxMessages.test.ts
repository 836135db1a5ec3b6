/**
 * The inbox's messages as the scripts publish them, decoded (src/backends/redis/protocol/codec.ts):
 * a grant with its fence block, a 'behind' hint, and what is not taken for a grant — a fence or
 * block that is not a positive integer would hand out fences without end.
 */
import { describe, expect, it } from 'vitest';
import { decodeInboxMessage } from '../../src/backends/redis/protocol/codec.js';

describe('inbox messages', () => {
  it('decodes a grant (token, fence, waiting, fences, at) and a behind hint', () => {
    expect(decodeInboxMessage('granted tok.1 1000 3 257 99')).toEqual({ kind: 'granted', token: 'tok.1', fence: 1000, waiting: 3, fences: 257, at: 99 });
    expect(decodeInboxMessage('granted tok.1 1000 0 1')).toEqual({ kind: 'granted', token: 'tok.1', fence: 1000, waiting: 0, fences: 1, at: undefined });
    expect(decodeInboxMessage('behind tok.2 250')).toEqual({ kind: 'behind', token: 'tok.2', ttl: 250 });
  });

  it('takes nothing malformed for a grant', () => {
    for (const message of [
      'granted tok 1000 3 x 99',
      'granted tok x 3 1 99',
      'granted tok 1000 3 0 99',
      'granted tok 1000 3 -2 99',
      'granted tok 1000 3 1.5 99',
      'granted tok',
      'nonsense',
    ]) {
      expect(decodeInboxMessage(message)).toBeUndefined();
    }
  });
});
