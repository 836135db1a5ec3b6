-- releaseShared: give a holder's permits of a shared lock back, and grant the waiters at the head
-- of the line that fit now (announced on their inboxes).
-- KEYS as for acquireShared (holders, permits, line, places, fence counter). ARGV[1] the token.
-- Returns 1 when the caller held permits, 0 when it did not (its lease ended, or released).
--@include lib/numbers.lua
--@include lib/clock.lua
--@include lib/maxBlock.lua
--@include lib/fences.lua
--@include lib/announce.lua
--@include lib/shared.lua

local holders, permits, line, places, fenceKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local token = ARGV[1]
local now, seed = serverClock()
return giveBackShared(holders, permits, line, places, fenceKey, token, now, seed)
