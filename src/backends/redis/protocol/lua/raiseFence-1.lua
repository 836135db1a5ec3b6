-- raiseFence: a quorum store's fence record on one node. After a quorum of nodes granted a key, the
-- quorum store derives its fences from a quorum of theirs (the highest first fence and the smallest
-- block among the quorum of winners with the lowest first fences) and, when the winners' blocks
-- disagree (see quorumAcquire-4.lua for the floor that usually makes them agree), raises the fence
-- record of each winner whose own block does not cover it to the last of them, so the next grant on that node
-- starts above every fence of this grant, whichever node issued it (see
-- backends/redis/quorum/quorumFences.ts).
-- KEYS[1] the lock's fence counter (see lib/fences.lua); ARGV[1] the last fence of the grant.
--
-- The record lives until this node's clock (its seed, lib/clock.lua) has passed it, as every record
-- does (lib/recordBlock.lua): from then on the seed alone keeps grants above it. A value further
-- ahead of this node's clock than MAX_LEAD (60 s of seed) is refused with an error rather than
-- capped: it means the nodes' clocks are that far apart (or a caller is broken), and capping it
-- would silently give up the fences' order.
-- Returns 1 when the record is at least ARGV[1] now.
--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua
--@include lib/recordBlock.lua

local MAX_LEAD = 60 * 1000 * 4000
local last = tonumber(ARGV[1])
if not last or last < 1 or last ~= math.floor(last) then
  return redis.error_reply('rxjs-lock: raiseFence needs a positive integer fence')
end
local _, seed = serverClock()
if last > seed + MAX_LEAD then
  return redis.error_reply('rxjs-lock: fence ' .. int(last) .. ' is more than 60 s ahead of this node\'s clock (' .. int(seed) .. '): are the nodes\' clocks that far apart?')
end
recordBlock(KEYS[1], last, seed)
return 1
