-- acquire: set-if-absent with a time-to-live, issuing a fencing token in the same atomic step.
-- KEYS[1] the lock key; KEYS[2] its fence counter (same hash slot, never expires).
-- ARGV[1] the caller's token; ARGV[2] the time-to-live in ms.
-- Returns the new fence (an integer >= 1) when the lock was taken, 0 when another token holds it.
-- The counter survives the lock key, so fences only grow, across clients and their restarts.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
