-- fencedWrite: a write that a stale lock holder cannot make.
-- KEYS[1] the resource (a hash with fields `fence` and `value`).
-- ARGV[1] the writer's fencing token; ARGV[2] the value.
-- Accepts the write when the token is at least the highest one accepted so far (a holder may
-- write more than once), and records it. Returns {1, token} when written, {0, highest} when
-- refused because a newer holder has written already.
local highest = tonumber(redis.call('HGET', KEYS[1], 'fence'))
local fence = tonumber(ARGV[1])
if highest and fence < highest then
  return {0, highest}
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return {1, fence}
