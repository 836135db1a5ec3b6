-- A released block of fences (see fences.lua for the whole story).
-- Needs numbers.lua and maxBlock.lua.

-- The last fence a releasing holder reserved: what it says (ARGV, a safe integer), or the most it
-- can have.
local function reservedBy(arg, seed)
  local said = tonumber(arg or '')
  if said and said >= 0 and said <= 9007199254740991 then
    return said
  end
  return seed + MAX_BLOCK
end

-- Records a released block the clock has not passed yet, so the next grant starts above it.
local function recordBlock(fenceKey, last, seed)
  if last > seed and last > tonumber(redis.call('GET', fenceKey) or '0') then
    redis.call('SET', fenceKey, int(last), 'PX', math.floor((last - seed) / 4000) + 2)
  end
end
