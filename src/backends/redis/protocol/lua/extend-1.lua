-- extend: compare-and-pexpire.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the new time-to-live in ms.
-- Resets the TTL only while the key still holds the caller's token.
-- Returns 1 when extended, 0 when the key is absent (expired or deleted), -1 when another token
-- holds it.
-- (A key of another type — someone wrote over the lock — is someone else's: a pcall, so that one
-- such key does not fail a whole pipeline of renewals.)
-- A TTL below 1 ms is refused: PEXPIRE 0 would delete the key without the release that records
-- its fences (see lib/recordBlock.lua).
if not (tonumber(ARGV[2]) and tonumber(ARGV[2]) >= 1) then
  return redis.error_reply('rxjs-lock: extend needs a TTL of at least 1 ms')
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' and holder.err then
  return -1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return -1
end
return 0
