-- fencedRead: the value of a fenced resource and the token of its last accepted write.
-- KEYS[1] the resource (a hash with fields `fence` and `value`). Returns {fence, value}, both
-- false when nothing was written yet.
return redis.call('HMGET', KEYS[1], 'fence', 'value')
