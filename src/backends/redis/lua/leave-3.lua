-- leave: a waiter gives up its place in line.
-- KEYS[1] the lock key; KEYS[2] the line; KEYS[3] the line's expiries. ARGV[1] the waiter's token;
-- ARGV[2] its inbox channel (its place is the member "<token> <inbox>").
-- Returns 1 when the key had been handed to the waiter meanwhile (it must release it), else 0.
local member = ARGV[1] .. ' ' .. ARGV[2]
redis.call('ZREM', KEYS[2], member)
redis.call('ZREM', KEYS[3], member)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
