-- acquire: set-if-absent with a time-to-live and a fencing token, fair to waiters in line.
-- KEYS[1] the lock key; KEYS[2] its fence counter (never expires); KEYS[3] the line of waiting
-- tokens (sorted set, score = arrival time in ms); KEYS[4] the line's expiry times (sorted set,
-- score = when each entry lapses). All in the lock key's hash slot.
-- ARGV[1] the caller's token; ARGV[2] the time-to-live in ms; ARGV[3] how long a waiter's place
-- lasts without being renewed, in ms (absent or 0: do not queue); ARGV[4] the caller's inbox
-- channel, where a release announces a grant to it (absent or '' for none).
-- Fences are issued 1024 apart (FENCE_STRIDE in src/store/LockStore.ts).
-- (Arguments a call does not need are left out: every argument costs on the common path.)
-- A place in line is the member "<token> <inbox>".
--
-- Returns the new fence (an integer > 0) when the caller took the free key with its own TTL and
-- nobody is in line; {1, fence, ttl, waiting} when it holds the key with waiters in line (a release
-- handed it to the caller in line while it waited, and ttl is what the key has left; or the caller
-- was first in line for a free key); {0, holder's pttl, queued (1/0)} when the key stays someone
-- else's.
-- (A bare integer on the common path: a reply table costs the client more than the rest of it.)
local lock, fences, line, lapses = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl, place = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3] or '0')
local stride = 1024

-- A caller in line may have been handed the key by a release while it waited.
local member
if place > 0 then
  member = token .. ' ' .. (ARGV[4] or '')
end
if place > 0 and redis.call('GET', lock) == token then
  redis.call('ZREM', line, member)
  redis.call('ZREM', lapses, member)
  return {1, tonumber(redis.call('GET', fences)), redis.call('PTTL', lock), redis.call('ZCARD', line)}
end

-- The common case, nobody in line: set-if-absent, no clock, no clean-up.
if redis.call('EXISTS', line) == 0 then
  if redis.call('SET', lock, token, 'NX', 'PX', ttl) then
    return redis.call('INCRBY', fences, stride)
  end
  if place == 0 then
    return {0, redis.call('PTTL', lock), 0}
  end
end

local holder = redis.call('GET', lock)
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', lapses, '-inf', now)) do
  redis.call('ZREM', line, gone)
  redis.call('ZREM', lapses, gone)
end

if not holder then
  local first = redis.call('ZRANGE', line, 0, 0)[1]
  if first == nil or (member and first == member) then
    redis.call('SET', lock, token, 'PX', ttl)
    if first then
      redis.call('ZREM', line, member)
      redis.call('ZREM', lapses, member)
    end
    return {1, redis.call('INCRBY', fences, stride), ttl, redis.call('ZCARD', line)}
  end
end

if place > 0 then
  redis.call('ZADD', line, 'NX', now, member)
  redis.call('ZADD', lapses, now + place, member)
  -- the line lives as long as its longest-lived place (waiters may use different place TTLs)
  if redis.call('PTTL', line) < place * 2 then
    redis.call('PEXPIRE', line, place * 2)
    redis.call('PEXPIRE', lapses, place * 2)
  end
  return {0, redis.call('PTTL', lock), 1}
end
return {0, redis.call('PTTL', lock), 0}
