-- acquire: set-if-absent with a time-to-live and fencing tokens, fair to waiters in line.
-- KEYS[1] the lock key (its value: the owner's token); KEYS[2] its fence counter; KEYS[3] the
-- line; KEYS[4] the places (see lib/line.lua). All in the lock key's hash slot.
-- ARGV[1] the caller's token; ARGV[2] the time-to-live in ms; ARGV[3] how many fences to reserve
-- (at most MAX_BLOCK, see lib/fences.lua).
-- For a caller in line only: ARGV[4] how long its place lasts without a refresh, in ms; ARGV[5]
-- 'keep' (take or refresh the place when refused) or 'leave' (give it up when refused: the last
-- attempt); ARGV[6] the caller's inbox channel, where a hand-off is announced ('' for none).
-- (Arguments a call does not need are left out: every argument costs on the common path.)
--
-- Returns the first fence (an integer) when the caller took the free key with its own TTL, nobody
-- is in line and it got all the fences it asked for (the common case: a bare integer costs the
-- client least); else {1, fence, ttl, waiting, fences} when it holds the key (fences: how many it
-- got; a release handed it over while it waited, and ttl is what the key has left; or it was first
-- in line for a free key); else {0, holder's pttl, queued (1/0)[, the server clock's seed when
-- queued]}.
--@include lib/maxBlock.lua

local lock, fenceKey, line, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token = ARGV[1]

-- The common case: nobody in line, no record of fences or of a hand-off beside the key, and the
-- key free. Its block starts at the clock and is not recorded: the key is held, so the next grant
-- comes after its release, which records the block if the clock has not passed it by then, or
-- after its TTL (≥ 1 ms: the clock has passed any block). See lib/fences.lua.
-- Written for the server's time: every statement here runs on every uncontended acquire, so the
-- arguments are read only as far as the path needs them (a caller in line sends ARGV[4]), and the
-- seed of lib/clock.lua is computed inline (a function would cost a closure on every call; Lua
-- turns TIME's strings into numbers by itself).
if (ARGV[4] == nil or tonumber(ARGV[4]) <= 0) and redis.call('EXISTS', line, places, fenceKey) == 0 and redis.call('SET', lock, token, 'NX', 'PX', ARGV[2]) then
  local t = redis.call('TIME')
  local seed = (t[1] - 1735689600) * 4000000 + t[2] * 4
  local fences = tonumber(ARGV[3])
  if fences >= 1 and fences <= MAX_BLOCK then
    return seed + 1
  end
  return {1, seed + 1, tonumber(ARGV[2]), 0, math.max(1, math.min(fences, MAX_BLOCK))}
end

local ttl, fences = tonumber(ARGV[2]), tonumber(ARGV[3])
local placeTtl = tonumber(ARGV[4] or '0')
local inLine = placeTtl > 0

-- The rest comes after the common path, which does not need it: a script runs its
-- `local function` statements on every call, and each costs the server a closure.
--@include lib/clock.lua
--@include lib/numbers.lua
--@include lib/fences.lua
--@include lib/line.lua
--@include lib/announce.lua

local holder = redis.call('GET', lock)
if holder == token then
  -- The key is the caller's: a release handed it over while the caller waited in line (the
  -- hand-off recorded its fences), or an earlier run of this very call took it (the client sent
  -- it again, its answer lost with the connection). The earlier run's block, unrecorded if it
  -- took the common path, ends at most MAX_BLOCK above the clock: the new one starts above that.
  leaveLine(line, places, token)
  local fence, reserved = grantOf(places, token)
  if not fence then
    local _, seed = serverClock()
    fence, reserved = issueFences(fenceKey, fences, seed, seed + MAX_BLOCK)
  end
  return {1, fence, redis.call('PTTL', lock), redis.call('ZCARD', line), reserved}
end
if holder and not inLine then
  return {0, redis.call('PTTL', lock), 0}
end

local now, seed = serverClock()
if not holder then
  local first = firstLive(line, places, now)
  if first == nil or first == token then
    redis.call('SET', lock, token, 'PX', ttl)
    if first then
      leaveLine(line, places, token)
    end
    -- taken directly: a record of an earlier hand-off (lapsed unclaimed) is stale now
    redis.call('HDEL', places, 'grant')
    local fence, count = issueFences(fenceKey, fences, seed)
    -- The key lapsed (no release, so no hand-off told the line): when this grant may end before
    -- the next waiter looks again, tell it, as a release's hand-off does — a holder that stalls
    -- must not keep the key from it longer than its TTL.
    local behind, _, _, behindInbox, behindLapse, behindPlaceTtl = firstLive(line, places, now)
    if behind and behindInbox ~= '' and now + ttl < behindLapse - behindPlaceTtl * 2 / 3 then
      announce(behindInbox, 'behind ' .. behind .. ' ' .. int(ttl))
    end
    return {1, fence, ttl, redis.call('ZCARD', line), count}
  end
end

if inLine then
  if ARGV[5] == 'leave' then
    leaveLine(line, places, token)
    return {0, redis.call('PTTL', lock), 0}
  end
  redis.call('ZADD', line, 'NX', int(now), token)
  redis.call('HSET', places, 'w:' .. token, int(now + placeTtl) .. ' ' .. int(ttl) .. ' ' .. int(fences) .. ' ' .. int(placeTtl) .. ' ' .. (ARGV[6] or ''))
  -- the line lives as long as its longest-lived place (waiters may use different place TTLs)
  if redis.call('PTTL', line) < placeTtl * 2 then
    redis.call('PEXPIRE', line, placeTtl * 2)
  end
  if redis.call('PTTL', places) < placeTtl * 2 then
    redis.call('PEXPIRE', places, placeTtl * 2)
  end
  -- with the server's clock: a hand-off signal dated before it is stale (this call found the key
  -- not the caller's), whatever order the two reach the caller in
  return {0, redis.call('PTTL', lock), 1, seed}
end
return {0, redis.call('PTTL', lock), 0}
