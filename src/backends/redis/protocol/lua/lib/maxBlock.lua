-- Most fences one grant reserves: a caller asking for more gets this many. A release that does not
-- say how far its grant reserved is assumed to have reserved this many from its own clock reading
-- (see fences.lua and recordBlock.lua).
local MAX_BLOCK = 1024
