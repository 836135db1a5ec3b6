-- Integers as strings for Redis: Lua 5.1 turns a number into a string with 14 significant digits
-- ("%.14g"), which rounds fences (up to 2^53) and would make two of them equal. Every number that
-- can be large goes through int() before it is sent to Redis or joined into a string.
local function int(n)
  return string.format('%.0f', n)
end
