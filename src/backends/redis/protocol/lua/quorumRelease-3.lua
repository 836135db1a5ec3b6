-- quorumRelease: one node's part of a quorum store's release (backends/redis/quorum):
-- compare-and-delete, and the fences' record. No line to hand the key to (see quorumAcquire-4.lua).
-- KEYS[1] the lock key; KEYS[2] its fence counter; KEYS[3] who was refused the key last among those
-- that listen for hints ('<inbox> <token>', quorumAcquire-4.lua). ARGV[1] the caller's token;
-- ARGV[2] the last fence of the grant, when the caller knows it (else the most a grant can have
-- reserved), or 'passed' when the caller knows this node's clock has passed it (see
-- lib/fences.lua and codec.ts releaseArgs).
-- When another token that listens was refused the key within 2 s, it is hinted, on its inbox, that
-- the key is free ('freed <token>'), so that it asks at once instead of at the end of its back-off
-- step (a hint only: whoever asks first takes the key). The note is read with the key, in one MGET
-- (which answers nil for a key of another type): an uncontended release costs nothing more.
-- Only while the key still holds the caller's token. Returns 1 when deleted, 0 when the key was not
-- the caller's.
--
-- Written for the server's time: every statement here runs on every release, so lib/clock.lua's
-- seed and lib/recordBlock.lua's reservedBy and recordBlock are written out inline (a script runs
-- its `local function` statements on every call, and each costs the server a closure).
--@include lib/maxBlock.lua

local lock, fenceKey = KEYS[1], KEYS[2]
local values = redis.call('MGET', lock, KEYS[3])
if values[1] ~= ARGV[1] then
  return 0
end
redis.call('DEL', lock)
local hint = values[2]
if hint then
  local space = string.find(hint, ' ', 1, true)
  if space and space > 1 and string.sub(hint, space + 1) ~= ARGV[1] then
    redis.call('PUBLISH', string.sub(hint, 1, space - 1), 'freed ' .. string.sub(hint, space + 1))
  end
end
local said = ARGV[2]
if said == 'passed' then
  return 1
end

-- The grant's block ends here: the next grant on this node must start above it. A block that
-- started above the clock was recorded by its grant; one that started at the clock is recorded
-- here if the clock has not passed it yet. Its last fence: what the caller says, believed up to
-- the most a grant can have reserved from this clock reading (seed + MAX_BLOCK), and that most when
-- it says nothing (see lib/recordBlock.lua reservedBy).
local t = redis.call('TIME')
local seed = (t[1] - 1735689600) * 4000000 + t[2] * 4
local last = tonumber(said or '')
if not (last and last >= 0 and last < seed + MAX_BLOCK) then
  last = seed + MAX_BLOCK
end
if last > seed and last > tonumber(redis.call('GET', fenceKey) or '0') then
  redis.call('SET', fenceKey, string.format('%.0f', last), 'PX', math.floor((last - seed) / 4000) + 2)
end
return 1
