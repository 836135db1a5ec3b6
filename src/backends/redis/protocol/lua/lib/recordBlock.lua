-- A released block of fences (see fences.lua for the whole story).
-- Needs numbers.lua and maxBlock.lua.

-- The last fence a releasing grant gave out: what the caller says (ARGV), or when it does not say,
-- the most it can have reserved — a block left unrecorded ends at most MAX_BLOCK above the clock
-- of its grant, and so of any later moment. What it says is believed up to that bound (a caller
-- that says less than its holders were given can make the next grant's fences overlap theirs: the
-- engine says the grant's first fence plus the fences its holders got; fences reserved and never
-- given out protect nothing and need not be kept below the next grant), and capped there, so no
-- caller can push the counter further ahead of the clock than a grant can.
local function reservedBy(arg, seed)
  local said = tonumber(arg or '')
  if said and said >= 0 and said < seed + MAX_BLOCK then
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
