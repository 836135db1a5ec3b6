-- Fences: every grant reserves consecutive fences above every fence issued or reserved for the key
-- before, and returns the first and how many. The counter (the fence key) holds the last one
-- reserved; the clock's seed (see clock.lua) is the floor. A counter lost with the server's data
-- (a restart without persistence, FLUSHALL, eviction) or found stale (a failover to a replica
-- that missed the last writes) is therefore no step back: the seed has passed every fence issued
-- before, except for what the counter led the clock by. That lead is kept to at most one block —
-- a grant takes fewer fences than asked when the counter is ahead of the clock — so a new holder's
-- fence can fall below its predecessor's block only if the data was lost and the key granted again
-- within (that block's size) / 4 microseconds of the predecessor's grant. Because the seed catches
-- up with the counter so fast, the counter only has to live until it does: it expires 2 ms after.
-- (Assumes the servers' clocks do not go back.)
-- Needs numbers.lua.
local function issueFences(fenceKey, n, seed)
  local base = tonumber(redis.call('GET', fenceKey) or '0')
  if seed > base then
    base = seed
  end
  local count = math.min(n, seed + n - base)
  if count < 1 then
    count = 1
  end
  local last = base + count
  redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
  return base + 1, count
end
