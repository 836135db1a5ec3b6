-- Announces a hand-off on a waiter's inbox channel: a store's broadcast inbox
-- ('rxjs-lock:inbox:<uuid>') by PUBLISH, which a Redis Cluster relays to every node; a shard
-- channel ('…rxjs-lock:wake:{<tag>}…', Redis Cluster, Redis >= 7) by SPUBLISH, which only the
-- node serving the channel's slot delivers. The store names a shard channel with its lock key's
-- hash tag, since a script on a Cluster may only touch channels of its keys' slot.
local function announce(inbox, message)
  if string.find(inbox, 'rxjs-lock:wake:', 1, true) then
    redis.call('SPUBLISH', inbox, message)
  else
    redis.call('PUBLISH', inbox, message)
  end
end
