-- Fences: every grant reserves consecutive fences above every fence issued or reserved for the key
-- before, and returns the first and how many. The clock's seed (see clock.lua) is the floor; the
-- counter (the fence key) records a reservation the clock has not passed yet. A counter lost with
-- the server's data (a restart without persistence, FLUSHALL, eviction) or found stale (a failover
-- to a replica that missed the last writes) is therefore no step back: the seed has passed every
-- fence issued before, except for what a block led the clock by. That lead is kept to at most one
-- block — a grant takes fewer fences than asked when the counter is ahead of the clock, and never
-- more than MAX_BLOCK — so a new holder's fence can fall below its predecessor's block only if the
-- data was lost and the key granted again within (that block's size) / 4 microseconds of the
-- predecessor's grant. Because the seed catches up so fast, the counter only has to live until it
-- does: it expires 2 ms after. (Assumes the servers' wall clocks never step back.)
--
-- Where the counter is written: a grant on the common path (a free key with nothing beside it,
-- see acquire-4.lua) does not write it — its block starts at the clock, so it ends at most
-- MAX_BLOCK above the clock; the key is held, so the next grant comes after its release or its
-- TTL (≥ 1 ms, by when the clock has passed any block), and the release records the block
-- (recordBlock.lua) if the clock has not passed it yet. Every other grant (a hand-off, a grant
-- from the line or next to a record, a call sent again) writes it at once, here.
-- Needs numbers.lua and maxBlock.lua.

-- Reserves up to `n` fences (at most MAX_BLOCK, at least 1) above the counter, the seed and
-- `floor` (the last fence of a block the counter may not record), and records them. Returns the
-- first and how many.
local function issueFences(fenceKey, n, seed, floor)
  local base = tonumber(redis.call('GET', fenceKey) or '0')
  if seed > base then
    base = seed
  end
  if floor and floor > base then
    base = floor
  end
  n = math.min(n, MAX_BLOCK)
  local count = math.min(n, seed + n - base)
  if count < 1 then
    count = 1
  end
  local last = base + count
  redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
  return base + 1, count
end
