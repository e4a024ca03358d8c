--[[
  time: the Redis server's clock, read on the node that owns the flock's hash slot (a bare TIME would go to
  any node of a Cluster): the clock estimate's samples (runner/redis/clock.ts) and `cronflock status`.

  KEYS[1] a key of the flock's hash slot (not read: it routes the call)
  Returns: {seconds, microseconds} as TIME gives them.
]]

return redis.call('TIME')
