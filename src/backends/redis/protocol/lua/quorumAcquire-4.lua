-- quorumAcquire: one node's part of a quorum store's grant (backends/redis/quorum): set-if-absent
-- with a time-to-live, and a block of fences that starts no lower than a floor the quorum store
-- sends. No line and no hand-off (a quorum store polls), so none of acquire-4.lua's machinery.
-- KEYS[1] the lock key (its value: the owner's token); KEYS[2] its fence counter (lib/fences.lua);
-- KEYS[3] who was refused the key last (a token, for 100 ms); KEYS[4] who was refused it last
-- among those that listen for hints, and where ('<inbox> <token>', for 2 s). ARGV[1] the caller's
-- token; ARGV[2] the time-to-live in ms; ARGV[3] how many fences to reserve (at most MAX_BLOCK);
-- ARGV[4] the fence floor: the first fence the quorum store expects of every node ('0' for none);
-- ARGV[5] the caller's inbox channel, where a release hints that the key is free
-- (quorumRelease-3.lua; absent or '' when the caller does not listen).
--
-- The block starts above this node's clock (its seed), above its fence record, and at the floor or
-- above. A block that starts at the clock is not recorded, as on the single-node store's common
-- path: the key is held, so the next grant comes after its release (which records the block the
-- quorum says, if the clock has not passed it) or its TTL (>= 1 ms, by when the clock has passed
-- any block). A block that starts above the clock (from the record or the floor) is recorded
-- until the clock has passed it: the next grant on this node starts above it, whatever ends this
-- one. So when a quorum of nodes answer the same block, each has already made sure of it, and the
-- quorum store needs no raise round (raiseFence-1.lua). A floor further ahead of the clock than
-- MAX_LEAD (60 s of seed, as raiseFence refuses) is not taken: the block then starts as without a
-- floor (at the clock, or above the record) and the quorum store falls back on the raise, which
-- refuses it with an error.
--
-- No line, but a grant says whether others are after the key: a refusal notes the refused token
-- for 100 ms (KEYS[3]), and a grant while another token's note lasts answers so (the quorum store
-- then answers `waiting: 1`, and the locker lets the others go first when it gives the key back,
-- instead of asking again at once and taking it nearly every time). A refused caller that listens
-- for hints is also noted with its inbox, for 2 s (KEYS[4]), so that a waiter polling that slowly
-- is hinted too: the release tells it that the key is free. (Two notes rather than one, so that an
-- older version, which reads KEYS[3] as a token, reads it right.)
--
-- Returns {fence, fences, seed, ttl[, 1 when others were refused the key lately]} when the caller
-- holds the key (the first fence, how many, the clock's seed read here, and what the key has left:
-- the TTL asked for, or less when an earlier run of this call, whose answer was lost, had set it);
-- else {0, holder's pttl}. When the caller took the free key, got all the fences it asked for and
-- nobody else was refused it lately, the answer is a bare integer instead (a
-- table reply costs the server more): the seed when the block starts at the clock (its fence is
-- the seed + 1), minus the seed when it starts at the floor (its fence is the floor); the TTL is
-- the one asked for (QuorumNode.ts decodeNodeAcquire). Not when the seed is 0 or below (a clock
-- before 2025), which the two would not tell apart.
--
-- Written for the server's time, as acquire-4.lua's common path: one SET both takes a free key and
-- reads its holder (NX with GET, Redis >= 7.0); the arguments are read only as the path needs
-- them; the seed of lib/clock.lua is computed inline (no `local function` here: a script runs its
-- function statements on every call, and each costs the server a closure).
--@include lib/maxBlock.lua

local lock, fenceKey = KEYS[1], KEYS[2]
local left, again
local holder = redis.call('SET', lock, ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
if not holder then
  left = tonumber(ARGV[2])
elseif holder ~= ARGV[1] then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', 100)
  if ARGV[5] and ARGV[5] ~= '' then
    redis.call('SET', KEYS[4], ARGV[5] .. ' ' .. ARGV[1], 'PX', 2000)
  end
  return {0, redis.call('PTTL', lock)}
else
  -- An earlier run of this very call took the key (the client sent it again, its answer lost with
  -- the connection): its block, unrecorded if it started at the clock, ends at most MAX_BLOCK
  -- above the clock.
  left = redis.call('PTTL', lock)
  again = true
end
local t = redis.call('TIME')
local seed = (t[1] - 1735689600) * 4000000 + t[2] * 4
-- (the fence record and who was refused last, in one command)
local records = redis.call('MGET', fenceKey, KEYS[3])
local base = tonumber(records[1] or '0')
if base < seed then
  base = seed
end
if again and base < seed + MAX_BLOCK then
  base = seed + MAX_BLOCK
end
local floor = tonumber(ARGV[4] or '0') or 0
-- (MAX_LEAD: 60 s of seed)
if floor > base + 1 and floor <= seed + 240000000 then
  base = floor - 1
end
-- at least 1 and at most MAX_BLOCK (as math.max(1, math.min(asked, MAX_BLOCK)): 1 when not a number
-- — 'nan', or a string tonumber() cannot read, which would otherwise fail the script after its SET)
local asked = tonumber(ARGV[3]) or 1
local count = asked
if not (count >= 1) then
  count = 1
elseif count > MAX_BLOCK then
  count = MAX_BLOCK
end
if base > seed then
  local last = base + count
  redis.call('SET', fenceKey, string.format('%.0f', last), 'PX', math.floor((last - seed) / 4000) + 2)
end
local refused = records[2]
if refused and refused ~= ARGV[1] then
  return {base + 1, count, seed, left, 1}
end
if not again and count == asked and seed > 0 then
  if base == seed then
    return seed
  end
  if base == floor - 1 then
    return -seed
  end
end
return {base + 1, count, seed, left}
