-- release: compare-and-delete, or hand the key straight to the first live waiter in line.
-- KEYS as for acquire (lock, fence counter, line, line expiries).
-- ARGV[1] the caller's token. Fences are issued 1024 apart (FENCE_STRIDE in src/store/LockStore.ts).
--
-- Only while the key still holds the caller's token (so a holder whose lease expired cannot
-- touch the key of whoever took it next). If a waiter is in line, the key becomes theirs at once,
-- with a new fence and a TTL that ends when their place in line would have lapsed (a waiter that
-- died does not hold the key longer than that; a live one extends it to its own TTL), and the
-- grant is published on the waiter's inbox channel. Returns 2 when handed over, 1 when deleted,
-- 0 otherwise.
local lock, fences, line, lapses = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, stride = ARGV[1], 1024

if redis.call('GET', lock) ~= token then
  return 0
end

if redis.call('EXISTS', line) == 0 then
  redis.call('DEL', lock)
  return 1
end

local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', lapses, '-inf', now)) do
  redis.call('ZREM', line, gone)
  redis.call('ZREM', lapses, gone)
end

local nextMember = redis.call('ZRANGE', line, 0, 0)[1]
if nextMember then
  local lapsesAt = tonumber(redis.call('ZSCORE', lapses, nextMember))
  redis.call('ZREM', line, nextMember)
  redis.call('ZREM', lapses, nextMember)
  local nextToken, inbox = string.match(nextMember, '^(%S+) (.*)$')
  redis.call('SET', lock, nextToken, 'PX', math.max(1, lapsesAt - now))
  local fence = redis.call('INCRBY', fences, stride)
  if inbox ~= '' then
    -- with how many are still in line behind the grantee (it sizes its turn by that)
    redis.call('PUBLISH', inbox, 'granted ' .. nextToken .. ' ' .. fence .. ' ' .. redis.call('ZCARD', line))
  end
  return 2
end

redis.call('DEL', lock)
return 1
