-- release: compare-and-delete, or hand the key straight to the first live waiter in line.
-- KEYS as for acquire (lock, fence counter, line, places). ARGV[1] the caller's token; ARGV[2] the
-- last fence its grant gave out, when the caller knows it (else the most it can have reserved), or
-- 'passed' when the caller knows the server's clock has passed that fence (see lib/fences.lua; the
-- Redis store says so when more time went by since the grant's answer than its block spans).
--
-- Only while the key still holds the caller's token (so a holder whose lease expired cannot
-- touch the key of whoever took it next). If a waiter is in line, the key becomes theirs at once,
-- with the fences its place asked for (or fewer, see lib/fences.lua) and a TTL that ends when its place would have lapsed, or
-- after the TTL it asked for, whichever comes first (a waiter that died holds the key no longer
-- than either; a live one extends it to its own TTL), and the hand-off is published on the
-- waiter's inbox channel as 'granted <token> <fence> <waiting> <fences> <seed>' (seed: the
-- server clock, so the waiter can tell a signal that arrives late from a fresh one). When that grant may end
-- before the waiter behind it looks again (it refreshes its place every third of the place's
-- lifetime at most), that one is told too, as 'behind <token> <ttl>': a grantee that died must not
-- keep the key from the next one longer than its grant. Returns 2 when handed over, 1 when
-- deleted, 0 when the key was not the caller's.
--
-- An inbox is either a store's broadcast channel ('rxjs-lock:inbox:<uuid>', PUBLISH) or, on a
-- Redis Cluster, a shard channel of this key's hash slot ('…rxjs-lock:wake:{<tag>}…', SPUBLISH:
-- it reaches the subscribers on the slot's node only, where PUBLISH goes to every node). A script
-- may only touch channels of its keys' slot, which the store guarantees by the channel's hash tag.

local lock, fenceKey, line, places = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token = ARGV[1]

if redis.call('GET', lock) ~= token then
  return 0
end
local said = ARGV[2]
if redis.call('EXISTS', line) == 0 then
  -- Nobody in line: delete the key (and the places, which hold at most the record of the
  -- hand-off to the caller). This runs on every uncontended release, so it reads no clock when
  -- the caller says its fences are passed, and otherwise defines no function unless the block
  -- may have to be recorded (a script runs its `local function` statements on every call, and
  -- each costs the server a closure); the seed of lib/clock.lua is computed inline.
  if said ~= 'passed' then
    local t = redis.call('TIME')
    local seed = (t[1] - 1735689600) * 4000000 + t[2] * 4
    local last = tonumber(said or '')
    if not (last and last >= 0 and last <= seed) then
      -- The clock may not have passed the caller's block: the next grant must start above it
      -- (see lib/fences.lua).
--@include lib/numbers.lua
--@include lib/maxBlock.lua
--@include lib/recordBlock.lua
      recordBlock(fenceKey, reservedBy(said, seed), seed)
    end
  end
  redis.call('DEL', lock, places)
  return 1
end

--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua
--@include lib/recordBlock.lua

local now, seed = serverClock()
-- The caller's block ends here: the next grant must start above it (see lib/fences.lua).
local reserved = said == 'passed' and 0 or reservedBy(said, seed)

-- The line's pieces come after the common path, which does not need them: a script runs its
-- `local function` statements on every call, and each costs the server a closure.
--@include lib/fences.lua
--@include lib/line.lua
--@include lib/announce.lua

local nextToken, nextTtl, nextFences, inbox, lapseAt = firstLive(line, places, now)
if nextToken then
  leaveLine(line, places, nextToken)
  local grantTtl = math.max(1, math.min(lapseAt - now, nextTtl))
  redis.call('SET', lock, nextToken, 'PX', int(grantTtl))
  local fence, count = issueFences(fenceKey, nextFences, seed, reserved)
  redis.call('HSET', places, 'grant', nextToken .. ' ' .. int(fence) .. ' ' .. int(count))
  if redis.call('PTTL', places) < grantTtl then
    redis.call('PEXPIRE', places, int(grantTtl))
  end
  local waiting = redis.call('ZCARD', line)
  if inbox ~= '' then
    announce(inbox, 'granted ' .. nextToken .. ' ' .. int(fence) .. ' ' .. int(waiting) .. ' ' .. int(count) .. ' ' .. int(seed))
  end
  local behind, _, _, behindInbox, behindLapse, behindPlaceTtl = firstLive(line, places, now)
  if behind and behindInbox ~= '' and now + grantTtl < behindLapse - behindPlaceTtl * 2 / 3 then
    announce(behindInbox, 'behind ' .. behind .. ' ' .. int(grantTtl))
  end
  return 2
end

redis.call('DEL', lock)
redis.call('HDEL', places, 'grant')
recordBlock(fenceKey, reserved, seed)
return 1
