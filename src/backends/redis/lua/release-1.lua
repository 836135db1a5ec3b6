-- release: compare-and-delete.
-- KEYS[1] the lock key; ARGV[1] the caller's token.
-- Deletes the key only while it still holds the caller's token, so a holder whose lease expired
-- cannot delete the key of whoever took it next. Returns 1 when deleted, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
