-- extend: compare-and-pexpire.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the new time-to-live in ms.
-- Resets the TTL only while the key still holds the caller's token.
-- Returns 1 when extended, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
