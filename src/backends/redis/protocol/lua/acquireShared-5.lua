-- acquireShared: take `weight` permits of a shared lock (semaphore, read-write lock), head of line.
-- KEYS[1] holders, KEYS[2] permits, KEYS[3] line, KEYS[4] places, KEYS[5] fence counter (see
-- lib/shared.lua), all in the lock key's hash slot.
-- ARGV[1] the caller's token; ARGV[2] its lease TTL in ms; ARGV[3] its weight; ARGV[4] the capacity
-- it asks for; ARGV[5] how long its place lasts without a refresh, in ms; ARGV[6] 'keep' (take or
-- refresh the place when refused) or 'leave' (give it up when refused: the last attempt); ARGV[7]
-- the caller's inbox channel ('' for none).
--
-- Returns {1, fence, ttl left, waiting} when the caller holds permits (granted now, or earlier
-- while it waited in line, or by an earlier run of this very call); else {0, ms until the first
-- holder's lease ends (-1: no holder), queued (1/0)[, the server clock's seed when queued]}: a
-- 'granted' signal dated after that seed is of a grant made after this call kept the place.
--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua
--@include lib/fences.lua
--@include lib/announce.lua
--@include lib/shared.lua

local holders, permits, line, places, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local token, ttl, weight, capacity, placeTtl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

local now, seed = serverClock()
local used = sweepHolders(holders, permits, now)
if redis.call('ZSCORE', line, token) then
  -- the caller's place is refreshed first, so a grant to it in this call is the caller's own TTL
  redis.call('HSET', places, token, int(now + placeTtl) .. ' ' .. int(ttl) .. ' ' .. int(weight) .. ' ' .. int(capacity) .. ' ' .. int(placeTtl) .. ' ' .. (ARGV[7] or ''))
end
local granted
used, granted = promote(holders, permits, line, places, fenceKey, used, now, seed, token)

local held = redis.call('HGET', permits, 'h:' .. token)
if held then
  -- (granted now from its place, earlier while it waited, or by an earlier run of this call)
  leaveSharedLine(line, places, token)
  if granted[token] then
    redis.call('ZADD', holders, int(now + ttl), token)
  end
  keepHolders(holders, permits, used, now)
  local endsAt = tonumber(redis.call('ZSCORE', holders, token))
  return {1, tonumber(string.match(held, ' (%d+)$')), math.max(0, endsAt - now), redis.call('ZCARD', line)}
end

if redis.call('ZCARD', line) == 0 and used + weight <= capacity then
  local fence = grantShared(holders, permits, fenceKey, token, weight, now + ttl, seed)
  keepHolders(holders, permits, used + weight, now)
  return {1, fence, ttl, 0}
end

if ARGV[6] == 'leave' then
  leaveSharedLine(line, places, token)
  -- the waiters behind the caller may fit now
  used = promote(holders, permits, line, places, fenceKey, used, now, seed)
  keepHolders(holders, permits, used, now)
  return {0, firstEnd(holders, now), 0}
end

redis.call('ZADD', line, 'NX', int(seed), token)
redis.call('HSET', places, token, int(now + placeTtl) .. ' ' .. int(ttl) .. ' ' .. int(weight) .. ' ' .. int(capacity) .. ' ' .. int(placeTtl) .. ' ' .. (ARGV[7] or ''))
-- the line lives as long as its longest-lived place (waiters may use different place TTLs)
if redis.call('PTTL', line) < placeTtl * 2 then
  redis.call('PEXPIRE', line, placeTtl * 2)
end
if redis.call('PTTL', places) < placeTtl * 2 then
  redis.call('PEXPIRE', places, placeTtl * 2)
end
keepHolders(holders, permits, used, now)
return {0, firstEnd(holders, now), 1, seed}
