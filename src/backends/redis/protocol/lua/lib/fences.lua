-- Fences: every grant reserves `n` consecutive fences above every fence issued or reserved for the
-- key before, and returns the first. The counter (the fence key) holds the last one reserved; the
-- clock's seed (see clock.lua) is the floor. A counter lost with the server's data (a restart
-- without persistence, FLUSHALL, eviction, a failover to a replica that missed the last write)
-- is therefore never a step back: the seed has passed every fence issued before, as long as fences
-- were not reserved faster than the seed grows (4,000 a millisecond) and the server's clock does
-- not go back. Because the seed catches up with the counter, the counter only has to live until it
-- does: it expires 2 ms after that, so a lock key leaves nothing behind.
-- Needs numbers.lua.
local function issueFences(fenceKey, n, seed)
  local last = tonumber(redis.call('GET', fenceKey) or '0')
  local base = last
  if seed > base then
    base = seed
  end
  local reserved = base + n
  redis.call('SET', fenceKey, int(reserved), 'PX', math.floor((reserved - seed) / 4000) + 2)
  return base + 1
end
