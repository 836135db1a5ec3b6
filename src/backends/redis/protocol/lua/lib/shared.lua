-- Shared locks (semaphores, read-write locks), in five keys of the lock key's hash slot:
--   holders  a sorted set: token → when its lease ends (server ms);
--   permits  a hash: 'h:<token>' → '<weight> [<fences> ]<fence>' (the fences its grant reserved
--            when more than one: its local successors'), and 'used' → the weights of the holders;
--   line     a sorted set: token → arrival (the clock's seed); the first member is next;
--   places   a hash: token → '<lapseAt> <ttl> <weight> <capacity> <placeTtl> [#<fences> ]<inbox>'
--            (when the place lapses, what a grant to it lasts, weighs and fits in, how many fences
--            it reserves when more than one, and where it is announced);
--   fence    the fence counter (see fences.lua).
-- A holder whose lease ended and a place that lapsed are swept by the next script that touches
-- the key, so a process that died keeps no capacity. Waiters are served head of line: the first
-- live waiter is granted when its weight fits its own capacity; nobody behind it is granted before.
-- Needs numbers.lua, maxBlock.lua, fences.lua and announce.lua.

-- The holders and their weights are two keys, written together by every script; a server that
-- lost one of them and not the other (eviction under maxmemory picks keys one by one) leaves
-- entries the other key does not know: weights that nobody's lease ends, still counted in 'used'
-- (capacity lost for as long as anybody holds the lock), or leases without a weight. Outside a
-- script the keys agree — the hash has a field per holder plus 'used', or neither key exists —
-- so comparing their sizes (O(1)) finds such a loss; then the entries that have no partner are
-- dropped (their holders' next renewal answers 'gone', as after any loss of data) and 'used' is
-- counted again from the weights left. Returns the permits held, or nil when the keys agree.
local function repairHolders(holders, permits)
  local count = redis.call('ZCARD', holders)
  if redis.call('HLEN', permits) == (count > 0 and count + 1 or 0) then
    return nil
  end
  local used = 0
  local fields = redis.call('HGETALL', permits)
  for i = 1, #fields, 2 do
    local field = fields[i]
    if string.sub(field, 1, 2) == 'h:' then
      if redis.call('ZSCORE', holders, string.sub(field, 3)) then
        used = used + tonumber(string.match(fields[i + 1], '^(%d+)'))
      else
        redis.call('HDEL', permits, field)
      end
    end
  end
  for _, token in ipairs(redis.call('ZRANGE', holders, 0, -1)) do
    if redis.call('HEXISTS', permits, 'h:' .. token) == 0 then
      redis.call('ZREM', holders, token)
    end
  end
  redis.call('HSET', permits, 'used', int(used))
  return used
end

-- Removes the holders whose lease ended before `now`; returns the permits the others hold, and
-- the permits recorded before (for keepHolders).
local function sweepHolders(holders, permits, now)
  local stored = repairHolders(holders, permits) or tonumber(redis.call('HGET', permits, 'used') or '0')
  local used = stored
  local ended = redis.call('ZRANGEBYSCORE', holders, '-inf', '(' .. int(now))
  for _, token in ipairs(ended) do
    local held = redis.call('HGET', permits, 'h:' .. token)
    if held then
      used = used - tonumber(string.match(held, '^(%d+)'))
      redis.call('HDEL', permits, 'h:' .. token)
    end
    redis.call('ZREM', holders, token)
  end
  if used < 0 then
    used = 0
  end
  return used, stored
end

-- Makes `token` a holder of `weight` until `endsAt`, with a block of up to `fences` new fences (the
-- holder's and its local successors', see engine/fencing); returns the first and how many.
local function grantShared(holders, permits, fenceKey, token, weight, endsAt, seed, fences)
  local fence, count = issueFences(fenceKey, fences, seed)
  redis.call('ZADD', holders, int(endsAt), token)
  redis.call('HSET', permits, 'h:' .. token, int(weight) .. ' ' .. (count > 1 and int(count) .. ' ' or '') .. int(fence))
  return fence, count
end

-- A holder's record ('h:<token>' of the permits hash): its fence and how many its grant reserved.
local function heldFences(held)
  return tonumber(string.match(held, ' (%d+)$')), tonumber(string.match(held, '^%d+ (%d+) %d+$') or '1')
end

-- A place's fields: lapseAt, ttl, weight, capacity, fences, inbox (nil for a malformed place).
-- ('#<fences> ' is written only when a place asks for more than one: places written without it
-- read as asking for one.)
local function readPlace(place)
  local lapseAt, ttl, weight, capacity, rest = string.match(place, '^(%d+) (%d+) (%d+) (%d+) %d+ (.*)$')
  if not lapseAt then
    return nil
  end
  local fences, inbox = string.match(rest, '^#(%d+) (.*)$')
  return tonumber(lapseAt), tonumber(ttl), tonumber(weight), tonumber(capacity), tonumber(fences or '1'), inbox or rest
end

-- Takes `token` out of the line.
local function leaveSharedLine(line, places, token)
  redis.call('ZREM', line, token)
  redis.call('HDEL', places, token)
end

-- The line and the places are two keys as well: a line lost alone (evicted, or expired a moment
-- before the places) leaves places of tokens no longer in line, which nothing else removes while
-- waiters keep the places key alive. More places than tokens in line (O(1) to compare) means
-- such orphans: they are dropped. (A token in line without a place is dropped when it reaches
-- the head, or given a place again when it asks before that.)
local function repairPlaces(line, places)
  if redis.call('HLEN', places) <= redis.call('ZCARD', line) then
    return
  end
  for _, token in ipairs(redis.call('HKEYS', places)) do
    if not redis.call('ZSCORE', line, token) then
      redis.call('HDEL', places, token)
    end
  end
end

-- Grants the live waiters at the head of the line, in order, while each one's weight fits its
-- capacity; drops lapsed places on the way and announces each grant on the waiter's inbox (but
-- not to `caller`, the waiter whose own call runs this: its answer says so). Returns the permits
-- held after, the tokens granted (each with the fences its grant reserved), whether it granted
-- any, and whether a live waiter is still in line (the head, which does not fit).
local function promote(holders, permits, line, places, fenceKey, used, now, seed, caller)
  repairPlaces(line, places)
  local granted, any = {}, false
  while true do
    local first = redis.call('ZRANGE', line, 0, 0)[1]
    if not first then
      return used, granted, any, false
    end
    local place = redis.call('HGET', places, first)
    local lapseAt, ttl, weight, capacity, fences, inbox
    if place then
      lapseAt, ttl, weight, capacity, fences, inbox = readPlace(place)
    end
    if lapseAt and lapseAt > now and used + weight > capacity then
      return used, granted, any, true
    end
    leaveSharedLine(line, places, first)
    if lapseAt and lapseAt > now then
      local fence, count = grantShared(holders, permits, fenceKey, first, weight, now + math.min(lapseAt - now, ttl), seed, fences)
      used = used + weight
      granted[first] = count
      any = true
      if inbox ~= '' and first ~= caller then
        announce(inbox, 'granted ' .. first .. ' ' .. int(fence) .. ' ' .. int(redis.call('ZCARD', line)) .. ' ' .. int(count) .. ' ' .. int(seed))
      end
    end
  end
end

-- Records `used` and keeps the holders' keys alive until the last lease ends (deletes them when
-- nobody holds anything). `stored`: what was recorded before this script (sweepHolders); `grew`:
-- this script granted or lengthened a lease. When neither changed, nothing is written: the keys
-- live until the last lease ends already (every grant and extension saw to that).
local function keepHolders(holders, permits, used, now, stored, grew)
  if not grew then
    if used == stored then
      return
    end
    if used > 0 then
      redis.call('HSET', permits, 'used', int(used))
      return
    end
  end
  local last = redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')[2]
  if not last then
    redis.call('DEL', holders, permits)
    return
  end
  redis.call('HSET', permits, 'used', int(used))
  local ms = math.max(1, tonumber(last) - now + 1)
  redis.call('PEXPIRE', holders, int(ms))
  redis.call('PEXPIRE', permits, int(ms))
end

-- Time until the first holder's lease ends, in ms, or -1 when nobody holds anything.
local function firstEnd(holders, now)
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')[2]
  if not first then
    return -1
  end
  return math.max(0, tonumber(first) - now)
end

-- Gives `token`'s permits back (if it holds any), then grants the waiters at the head of the line
-- that fit now; returns 1 when it held permits, else 0. (releaseShared and leaveShared.)
local function giveBackShared(holders, permits, line, places, fenceKey, token, now, seed)
  local used, stored = sweepHolders(holders, permits, now)
  local released = 0
  local held = redis.call('HGET', permits, 'h:' .. token)
  if held then
    used = math.max(0, used - tonumber(string.match(held, '^(%d+)')))
    redis.call('HDEL', permits, 'h:' .. token)
    redis.call('ZREM', holders, token)
    released = 1
  end
  local _, grew
  used, _, grew = promote(holders, permits, line, places, fenceKey, used, now, seed)
  keepHolders(holders, permits, used, now, stored, grew)
  return released
end
