-- The server's clock, read once per script (TIME: scripts replicate their effects, so replicas and
-- the AOF get the values computed here, not the call).
-- Returns the time in ms, and the fence seed: 4 per microsecond since 2025-01-01T00:00:00Z. The
-- seed grows by 4,000 a millisecond and stays below 2^53 (exact in a Lua number and in JavaScript)
-- until 2096.
local function serverClock()
  local t = redis.call('TIME')
  local sec, usec = tonumber(t[1]), tonumber(t[2])
  return sec * 1000 + math.floor(usec / 1000), (sec - 1735689600) * 4000000 + usec * 4
end
