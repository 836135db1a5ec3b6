/**
 * How the store's calls are put into Redis arguments and how Redis's replies are read back: the
 * one place that knows the scripts' argument order and reply shapes (see ./lua).
 */
import type { LeaveResult } from '../../../store/capabilities.js';
import { NOT_ACQUIRED, type AcquireResult, type ExtendOutcome, type ReleasedGrant } from '../../../store/LockStore.js';
import type { RedisReplies } from '../RedisClient.js';

/** Arguments of the acquire script; `line` only for a caller waiting in line. */
export function acquireArgs(
  token: string,
  ttlMs: number,
  fences: number,
  line?: { placeTtl: number; place: 'keep' | 'leave'; inbox: string },
): Array<string | number> {
  return line === undefined ? [token, ttlMs, fences] : [token, ttlMs, fences, line.placeTtl, line.place, line.inbox];
}

/**
 * The acquire script's reply: a bare first fence on the common path; `{1, fence, ttl, waiting,
 * fences}` for a key held now otherwise; `{0, pttl, queued}` when refused.
 */
export function decodeAcquire(reply: unknown, ttlMs: number, placeTtl: number): AcquireResult {
  if (typeof reply === 'number') return { acquired: true, fence: reply };
  const r = reply as number[];
  if (r[0] === 1) {
    const ttl = Math.max(0, r[2]!);
    return { acquired: true, fence: r[1]!, fences: r[4]!, waiting: r[3]!, ...(ttl === ttlMs ? {} : { ttl }) };
  }
  const pttl = r[1]!;
  if (r[2] === 1) return { acquired: false, holderTtl: pttl >= 0 ? pttl : undefined, queued: true, placeTtl, at: r[3] };
  return pttl < 0 ? NOT_ACQUIRED : { acquired: false, holderTtl: pttl };
}

/**
 * The acquireShared script's reply: `{1, fence, ttl left, waiting, by this run, fences reserved}`
 * when the caller holds permits,
 * `{0, ms until the first holder's lease ends (-1: none), queued[, the server clock's seed]}` when
 * refused (the seed, as `at`, dates the place against a later 'granted' signal).
 */
export function decodeAcquireShared(reply: unknown, ttlMs: number, placeTtl: number): AcquireResult {
  const r = reply as number[];
  if (r[0] === 1) {
    const ttl = Math.max(0, r[2]!);
    return { acquired: true, fence: r[1]!, fences: r[5] ?? 1, waiting: r[3]!, ...(ttl === ttlMs ? {} : { ttl }) };
  }
  const holderTtl = r[1]! >= 0 ? r[1]! : undefined;
  if (r[2] === 1) return { acquired: false, queued: true, placeTtl, at: r[3], ...(holderTtl === undefined ? {} : { holderTtl }) };
  return holderTtl === undefined ? NOT_ACQUIRED : { acquired: false, holderTtl };
}

/** Fences the server clock's seed grows by each microsecond (lua/lib/clock.lua). */
export const FENCES_PER_MICROSECOND = 4;

/**
 * Time added to the least a block can span before the caller may say the server's clock has passed
 * it, in µs. The bound: the grant read the clock at t (µs, TIME truncates it: the seed is
 * 4·⌊t⌋) and reserved seed + 1 … seed + n; the grant's answer left the server after that read,
 * and the release leaves the caller `e` µs (its own clock) after the answer came, so the release
 * and every later grant read t' ≥ t + e on the server's clock, whose seed is 4·⌊t'⌋ ≥ 4·(⌊t⌋ + ⌊e⌋):
 * at least the block's last fence as soon as ⌊e⌋ ≥ ⌈n / 4⌉ — e ≥ ⌈n / 4⌉ µs. What the margin covers
 * besides: the two clocks' rates (NTP slews by at most 500 ppm: 0.13 µs over a 256 µs block) and
 * `performance.now()`'s rounding, several times over. Assumes, as the fences do, that the server's
 * clock is not set back.
 */
export const CLOCK_MARGIN_US = 1;

/** µs after a grant's answer from which the server's clock has passed its block of `fences` (see {@link CLOCK_MARGIN_US}). */
export function passedAfterUs(fences: number): number {
  return Math.ceil(fences / FENCES_PER_MICROSECOND) + CLOCK_MARGIN_US;
}

/**
 * Arguments of the release script: the token, and what the caller knows of its grant's fences —
 * 'passed' when more time went by since the grant's answer than its block spans on the server's
 * clock (the script then reads no clock and records nothing), else the block's last fence; the
 * token alone when the grant is not known or not well-formed (the script assumes the most a grant
 * reserves).
 */
export function releaseArgs(token: string, grant: ReleasedGrant | undefined, now: number): Array<string | number> {
  if (grant === undefined) return [token];
  const { fence, fences, answeredAt } = grant;
  // (fence + fences a safe integer with fences one: fence is an integer too)
  if (!Number.isSafeInteger(fences) || fences < 1 || fence < 0 || !Number.isSafeInteger(fence + fences)) return [token];
  const last = fence + fences - 1;
  // (an answer time that is no time at all says nothing: the block is taken as not passed)
  if (!Number.isFinite(answeredAt)) return [token, last];
  const elapsedUs = (now - answeredAt) * 1000;
  return elapsedUs >= passedAfterUs(fences) ? [token, 'passed'] : [token, last];
}

/** The release script's reply: 2 handed over, 1 deleted, 0 not ours. */
export function decodeRelease(reply: unknown): boolean {
  return typeof reply === 'number' && reply > 0;
}

/** The extend script's reply: 1 extended, 0 absent, -1 held by another token. */
export function decodeExtend(reply: unknown): ExtendOutcome {
  return reply === 1 ? 'extended' : reply === -1 ? 'taken' : 'gone';
}

/**
 * The leave transaction's replies (ZREM line, HDEL places, GET lock, HGET places grant, PTTL
 * lock): granted when the lock holds `token`, with the last hand-off's fence when it went to
 * `token` (else the fence is unknown and the key must simply be given back).
 */
export function decodeLeave(replies: RedisReplies, token: string): LeaveResult {
  if (replies === null) throw new Error('the leave transaction was discarded');
  for (const [error] of replies) if (error !== null) throw error;
  const holder = replies[2]![1];
  if (holder !== token) return { granted: false };
  const ttl = Math.max(0, Number(replies[4]![1]));
  const grant = parseGrant(replies[3]![1]);
  if (grant === undefined || grant.token !== token) return { granted: true, fence: Number.NaN, fences: 0, ttl };
  return { granted: true, fence: grant.fence, fences: grant.fences, ttl };
}

/** `'<token> <fence> <fences>'`, the last hand-off as the release script records it. */
function parseGrant(value: unknown): { token: string; fence: number; fences: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(.*) (\d+) (\d+)$/.exec(value);
  return match === null ? undefined : { token: match[1]!, fence: Number(match[2]), fences: Number(match[3]) };
}

/** A hand-off announced on an inbox: `'granted <token> <fence> <waiting> <fences> <at>'` (at: the server clock's seed). */
export interface GrantMessage {
  readonly token: string;
  readonly fence: number;
  readonly waiting: number;
  readonly fences: number;
  readonly at: number | undefined;
}

/** The key was handed to the waiter ahead of `token`, for at most `ttl` ms: `'behind <token> <ttl>'`. */
export interface BehindMessage {
  readonly token: string;
  readonly ttl: number;
}

/** A message on an inbox, as the release script publishes it. */
export function decodeInboxMessage(message: string): ({ kind: 'granted' } & GrantMessage) | ({ kind: 'behind' } & BehindMessage) | undefined {
  const [kind, token, first, second, third, fourth] = message.split(' ');
  if (token === undefined || first === undefined) return undefined;
  if (kind === 'granted' && third !== undefined) {
    const fence = Number(first);
    const fences = Number(third);
    // (only the scripts publish here; anything else — a fence or block that is not a positive
    // integer — is not taken for a grant: a block of NaN fences would never run out)
    if (!Number.isSafeInteger(fence) || !Number.isSafeInteger(fences) || fences < 1) return undefined;
    return { kind, token, fence, waiting: Number(second ?? 0), fences, at: fourth === undefined ? undefined : Number(fourth) };
  }
  if (kind === 'behind') return { kind, token, ttl: Number(first) };
  return undefined;
}

/**
 * The token an inbox message is for (without decoding the rest): the inbox routes by it. A quorum
 * store's hint, `freed <token>`, ends with the token, which may hold spaces.
 */
export function grantRecipient(message: string): string | undefined {
  if (message.startsWith('freed ')) return message.slice(6);
  return message.split(' ', 2)[1];
}

/** An HGETALL reply as a record: ioredis answers an object (a flat array with some reply transformers off). */
export function hashRecord(reply: Record<string, string> | string[] | null): Record<string, string> {
  if (reply === null) return {};
  if (!Array.isArray(reply)) return reply;
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) record[reply[i]!] = reply[i + 1]!;
  return record;
}
