-- The line of waiters for a key, in two keys of its hash slot:
--   line   a sorted set: token → arrival time (ms); the first member is next;
--   places a hash: 'w:<token>' → '<lapseAt> <ttl> <fences> <placeTtl> <inbox>' (when the place
--          lapses, what a hand-off to it grants and reserves, how long a place lasts, and where to
--          announce it), and 'grant' → '<token> <fence> <fences>', the last hand-off.
-- Needs numbers.lua.

-- The first waiter whose place has not lapsed at `now`, after removing lapsed ones ahead of it:
-- token, ttl, fences, inbox, lapseAt, placeTtl; or nil when nobody waits.
local function firstLive(line, places, now)
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then
      return nil
    end
    local place = redis.call('HGET', places, 'w:' .. first)
    if place then
      local lapseAt, ttl, fences, placeTtl, inbox = string.match(place, '^(%d+) (%d+) (%d+) (%d+) (.*)$')
      lapseAt = tonumber(lapseAt)
      if lapseAt and lapseAt > now then
        return first, tonumber(ttl), tonumber(fences), inbox, lapseAt, tonumber(placeTtl)
      end
    end
    redis.call('ZREM', line, first)
    redis.call('HDEL', places, 'w:' .. first)
  end
end

-- Takes `token` out of the line.
local function leaveLine(line, places, token)
  redis.call('ZREM', line, token)
  redis.call('HDEL', places, 'w:' .. token)
end

-- The last hand-off, if it went to `token`: its fence and how many fences it reserved.
local function grantOf(places, token)
  local grant = redis.call('HGET', places, 'grant')
  if grant then
    local grantee, fence, fences = string.match(grant, '^(.*) (%d+) (%d+)$')
    if grantee == token then
      return tonumber(fence), tonumber(fences)
    end
  end
  return nil
end
