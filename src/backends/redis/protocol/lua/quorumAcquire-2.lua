-- quorumAcquire: one node's part of a quorum store's grant (backends/redis/quorum): set-if-absent
-- with a time-to-live, and a block of fences that starts no lower than a floor the quorum store
-- sends. No line and no hand-off (a quorum store polls), so none of acquire-4.lua's machinery.
-- KEYS[1] the lock key (its value: the owner's token); KEYS[2] its fence counter (lib/fences.lua).
-- ARGV[1] the caller's token; ARGV[2] the time-to-live in ms; ARGV[3] how many fences to reserve
-- (at most MAX_BLOCK); ARGV[4] the fence floor: the first fence the quorum store expects of every
-- node ('0' for none).
--
-- The block starts above this node's clock (its seed), above its fence record, and at the floor or
-- above. A block that starts at the clock is not recorded, as on the single-node store's common
-- path: the key is held, so the next grant comes after its release (which records the block the
-- quorum says, if the clock has not passed it) or its TTL (>= 1 ms, by when the clock has passed
-- any block). A block that starts above the clock (from the record or the floor) is recorded
-- until the clock has passed it: the next grant on this node starts above it, whatever ends this
-- one. So when a quorum of nodes answer the same block, each has already made sure of it, and the
-- quorum store needs no raise round (raiseFence-1.lua). A floor further ahead of the clock than
-- MAX_LEAD (60 s of seed, as raiseFence refuses) is not taken: the block then starts at the clock
-- and the quorum store falls back on the raise, which refuses it with an error.
--
-- Returns {fence, fences, seed, ttl} when the caller holds the key (the first fence, how many, the
-- clock's seed read here, and what the key has left: the TTL asked for, or less when an earlier
-- run of this call, whose answer was lost, had set it); else {0, holder's pttl}.
--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua

local lock, fenceKey = KEYS[1], KEYS[2]
local token, ttl, fences, floor = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4] or '0') or 0
local MAX_LEAD = 60 * 1000 * 4000

local left = ttl
local again = false
if not redis.call('SET', lock, token, 'NX', 'PX', ttl) then
  if redis.call('GET', lock) ~= token then
    return {0, redis.call('PTTL', lock)}
  end
  -- An earlier run of this very call took the key (the client sent it again, its answer lost with
  -- the connection): its block, unrecorded if it started at the clock, ends at most MAX_BLOCK
  -- above the clock.
  left = redis.call('PTTL', lock)
  again = true
end
local _, seed = serverClock()
local base = tonumber(redis.call('GET', fenceKey) or '0')
if base < seed then
  base = seed
end
if again and base < seed + MAX_BLOCK then
  base = seed + MAX_BLOCK
end
if floor > base + 1 and floor <= seed + MAX_LEAD then
  base = floor - 1
end
local count = math.max(1, math.min(fences, MAX_BLOCK))
local last = base + count
if base > seed then
  redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
end
return {base + 1, count, seed, left}
