/**
 * Attack: the late-signal check (a grant signal dated no later than the last "queued" answer is
 * checked with the store) relies on the release script putting the server clock in the signal.
 * A signal without it is still trusted as fresh. Two versions of this library may share one Redis
 * (the scripts are registered by SHA for that reason), as they do during a rolling upgrade: a
 * process still on the previous version (0.1.0 as of bc76989, whose release script is below,
 * comments stripped) hands the key over with the old message, `granted <token> <fence> <waiting>
 * <fences>`, and a waiter on this version that receives it late takes it for a fresh grant.
 *
 * Same set-up as attackWakeSignals.test.ts, in ../support/lateGrantSignal.ts (B's subscriber
 * link delays 1050 ms; B's ttl 300 and place TTL 3000; C behind B takes the lapsed grant; B's next
 * refresh is answered "queued"; then B's signal arrives), except that A's release is the previous
 * version's script.
 * Promise: never two holders.
 */
import { describe, expect, it } from 'vitest';
import { keysOf } from '../support/handoffHarness.js';
import { lateGrantSignalRounds } from '../support/lateGrantSignal.js';
import { redisSuite } from '../support/redisSuite.js';

/** The release script of the previous version (bc76989), comments stripped. */
const PREVIOUS_RELEASE = `
local function int(n)
  return string.format('%.0f', n)
end
local function serverClock()
  local t = redis.call('TIME')
  local sec, usec = tonumber(t[1]), tonumber(t[2])
  return sec * 1000 + math.floor(usec / 1000), (sec - 1735689600) * 4000000 + usec * 4
end
local function issueFences(fenceKey, n, seed)
  local base = tonumber(redis.call('GET', fenceKey) or '0')
  if seed > base then
    base = seed
  end
  local count = math.min(n, seed + n - base)
  if count < 1 then
    count = 1
  end
  local last = base + count
  redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
  return base + 1, count
end
local function firstLive(line, places, now)
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then
      return nil
    end
    local place = redis.call('HGET', places, 'w:' .. first)
    if place then
      local lapseAt, ttl, fences, placeTtl, inbox = string.match(place, '^(%d+) (%d+) (%d+) (%d+) (.*)$')
      lapseAt = tonumber(lapseAt)
      if lapseAt and lapseAt > now then
        return first, tonumber(ttl), tonumber(fences), inbox, lapseAt, tonumber(placeTtl)
      end
    end
    redis.call('ZREM', line, first)
    redis.call('HDEL', places, 'w:' .. first)
  end
end
local function leaveLine(line, places, token)
  redis.call('ZREM', line, token)
  redis.call('HDEL', places, 'w:' .. token)
end
local function grantOf(places, token)
  local grant = redis.call('HGET', places, 'grant')
  if grant then
    local grantee, fence, fences = string.match(grant, '^(.*) (%d+) (%d+)$')
    if grantee == token then
      return tonumber(fence), tonumber(fences)
    end
  end
  return nil
end
local lock, fenceKey, line, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token = ARGV[1]
if redis.call('GET', lock) ~= token then
  return 0
end
if redis.call('EXISTS', line) == 0 then
  redis.call('DEL', lock, places)
  return 1
end
local now, seed = serverClock()
local nextToken, nextTtl, nextFences, inbox, lapseAt = firstLive(line, places, now)
if nextToken then
  leaveLine(line, places, nextToken)
  local grantTtl = math.max(1, math.min(lapseAt - now, nextTtl))
  redis.call('SET', lock, nextToken, 'PX', int(grantTtl))
  local fence, count = issueFences(fenceKey, nextFences, seed)
  redis.call('HSET', places, 'grant', nextToken .. ' ' .. int(fence) .. ' ' .. int(count))
  if redis.call('PTTL', places) < grantTtl then
    redis.call('PEXPIRE', places, int(grantTtl))
  end
  local waiting = redis.call('ZCARD', line)
  if inbox ~= '' then
    redis.call('PUBLISH', inbox, 'granted ' .. nextToken .. ' ' .. int(fence) .. ' ' .. int(waiting) .. ' ' .. int(count))
  end
  local behind, _, _, behindInbox, behindLapse, behindPlaceTtl = firstLive(line, places, now)
  if behind and behindInbox ~= '' and now + grantTtl < behindLapse - behindPlaceTtl * 2 / 3 then
    redis.call('PUBLISH', behindInbox, 'behind ' .. behind .. ' ' .. int(grantTtl))
  end
  return 2
end
redis.call('DEL', lock)
redis.call('HDEL', places, 'grant')
return 1
`;

const suite = redisSuite();

describe('attack: a late grant signal from a process on the previous version (rolling upgrade)', () => {
  it('a waiter never takes a lapsed grant for its own while another process holds the key', async () => {
    const { overlaps, staleWins } = await lateGrantSignalRounds(suite, 2, async (a, key) => {
      // A's release, by the previous version's script.
      const k = keysOf(`lock:${key}`);
      expect(await suite.admin.eval(PREVIOUS_RELEASE, 4, k.lock, k.fence, k.line, k.places, a.token)).toBe(2);
    });
    // Never two holders: B may only get the key after C gave it back.
    expect({ overlaps, staleWins }).toEqual({ overlaps: [], staleWins: 0 });
  });
});
