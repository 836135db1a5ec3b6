-- acquireShared: take `weight` permits of a shared lock (semaphore, read-write lock), head of line.
-- KEYS[1] holders, KEYS[2] permits, KEYS[3] line, KEYS[4] places, KEYS[5] fence counter (see
-- lib/shared.lua), all in the lock key's hash slot.
-- ARGV[1] the caller's token; ARGV[2] its lease TTL in ms; ARGV[3] its weight; ARGV[4] the capacity
-- it asks for; ARGV[5] how long its place lasts without a refresh, in ms; ARGV[6] 'keep' (take or
-- refresh the place when refused) or 'leave' (give it up when refused: the last attempt); ARGV[7]
-- the caller's inbox channel ('' for none); ARGV[8] how many fences a grant reserves (the holder's
-- and its local successors', see engine/fencing; 1 when omitted).
--
-- Returns {1, fence, ttl left, waiting, by this run (1/0), fences reserved} when the caller holds
-- permits (granted
-- now by this very run — a write of the caller's connection — or earlier while it waited in line,
-- or by an earlier run of this very call); else {0, ms until the first
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

local fences = math.max(1, math.floor(tonumber(ARGV[8] or '1') or 1))
local now, seed = serverClock()
local place = int(now + placeTtl) .. ' ' .. int(ttl) .. ' ' .. int(weight) .. ' ' .. int(capacity) .. ' ' .. int(placeTtl) .. ' '
  .. (fences > 1 and '#' .. int(fences) .. ' ' or '') .. (ARGV[7] or '')
local used, stored = sweepHolders(holders, permits, now)
local inLine = redis.call('ZSCORE', line, token)
if inLine then
  -- the caller's place is refreshed first, so a grant to it in this call is the caller's own TTL
  redis.call('HSET', places, token, place)
end
local granted, grew, queued
used, granted, grew, queued = promote(holders, permits, line, places, fenceKey, used, now, seed, token)

-- A caller in line holds nothing (a grant takes it out of the line), unless granted just now; one
-- not in line may hold permits granted while it waited, or by an earlier run of this very call.
local held = (granted[token] or not inLine) and redis.call('HGET', permits, 'h:' .. token)
if held then
  -- (out of the line already: promote took it out, or it was not in it)
  local left
  if granted[token] then
    redis.call('ZADD', holders, int(now + ttl), token)
    left = ttl
  else
    left = math.max(0, tonumber(redis.call('ZSCORE', holders, token)) - now)
  end
  keepHolders(holders, permits, used, now, stored, grew)
  local fence, fences = heldFences(held)
  return {1, fence, left, redis.call('ZCARD', line), granted[token] and 1 or 0, fences}
end

if not queued and used + weight <= capacity then
  -- (nobody live in line: promote emptied it of lapsed places and granted those that fit)
  local fence, count = grantShared(holders, permits, fenceKey, token, weight, now + ttl, seed, fences)
  keepHolders(holders, permits, used + weight, now, stored, true)
  return {1, fence, ttl, 0, 1, count}
end

if ARGV[6] == 'leave' then
  if inLine then
    leaveSharedLine(line, places, token)
    -- the waiters behind the caller may fit now
    local _, more
    used, _, more = promote(holders, permits, line, places, fenceKey, used, now, seed)
    grew = grew or more
  end
  keepHolders(holders, permits, used, now, stored, grew)
  return {0, firstEnd(holders, now), 0}
end

if not inLine then
  redis.call('ZADD', line, 'NX', int(seed), token)
  redis.call('HSET', places, token, place)
end
-- the line lives as long as its longest-lived place (waiters may use different place TTLs): at
-- least placeTtl from now; lengthened to twice that, so most calls need not lengthen it again
if redis.call('PTTL', line) < placeTtl then
  redis.call('PEXPIRE', line, placeTtl * 2)
end
if redis.call('PTTL', places) < placeTtl then
  redis.call('PEXPIRE', places, placeTtl * 2)
end
keepHolders(holders, permits, used, now, stored, grew)
return {0, firstEnd(holders, now), 1, seed}
