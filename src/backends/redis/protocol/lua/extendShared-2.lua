-- extendShared: reset the lease of a holder of a shared lock.
-- KEYS[1] holders, KEYS[2] permits (see lib/shared.lua). ARGV[1] the caller's token; ARGV[2] the
-- new TTL in ms (at least 1).
-- Returns 1 when extended, 0 when the caller holds nothing (its lease ended, it released, or the
-- data was lost).
--@include lib/numbers.lua
--@include lib/clock.lua
if not (tonumber(ARGV[2]) and tonumber(ARGV[2]) >= 1) then
  return redis.error_reply('rxjs-lock: extendShared needs a TTL of at least 1 ms')
end
local holders, permits, token, ttl = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
local now = serverClock()
local endsAt = redis.call('ZSCORE', holders, token)
if not endsAt or tonumber(endsAt) < now or redis.call('HEXISTS', permits, 'h:' .. token) == 0 then
  return 0
end
redis.call('ZADD', holders, 'XX', int(now + ttl), token)
-- the keys live at least as long as this lease
if redis.call('PTTL', holders) < ttl + 1 then
  redis.call('PEXPIRE', holders, ttl + 1)
end
if redis.call('PTTL', permits) < ttl + 1 then
  redis.call('PEXPIRE', permits, ttl + 1)
end
return 1
