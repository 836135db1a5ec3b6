-- quorumRelease: one node's part of a quorum store's release (backends/redis/quorum):
-- compare-and-delete, and the fences' record. No line to hand the key to (see quorumAcquire-2.lua).
-- KEYS[1] the lock key; KEYS[2] its fence counter. ARGV[1] the caller's token; ARGV[2] the last
-- fence of the grant, when the caller knows it (else the most a grant can have reserved), or
-- 'passed' when the caller knows this node's clock has passed it (see lib/fences.lua and
-- codec.ts releaseArgs).
-- Only while the key still holds the caller's token. Returns 1 when deleted, 0 when the key was not
-- the caller's.

local lock, fenceKey = KEYS[1], KEYS[2]
if redis.call('GET', lock) ~= ARGV[1] then
  return 0
end
redis.call('DEL', lock)
if ARGV[2] == 'passed' then
  return 1
end

--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua
--@include lib/recordBlock.lua

-- The grant's block ends here: the next grant on this node must start above it. A block that
-- started above the clock was recorded by its grant; one that started at the clock is recorded
-- here if the clock has not passed it yet.
local _, seed = serverClock()
recordBlock(fenceKey, reservedBy(ARGV[2], seed), seed)
return 1
