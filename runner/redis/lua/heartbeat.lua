--[[
  heartbeat: one replica's membership in the flock's planning, on the Redis clock.

  Membership only divides *planning* work (which replica offers which schedule's occurrences first); it decides
  nothing about claims, so a stale or split view costs duplicate offers (idempotent) at worst, never a second
  run. A member that stops heartbeating (killed, stopped, partitioned) drops out when its registration expires.

  KEYS[1] members (ZSET, score: expiry ms)
  KEYS[2] digests (HASH replica → definitions digest)
  KEYS[3] last seen (ZSET replica → its latest heartbeat, Redis ms; entries a day old dropped): how long ago a
          publisher of a file's names was here (names stay owned a while after: runner/store/ownership.ts)
  KEYS[4] the caller's handoffs (ZSET, runner/engine/handoffs.ts): how many wait is answered, so that a replica
          takes them only when there are some
  KEYS[5] capabilities (HASH replica → what it can run, runner/engine/handoffs.ts): the caller's is written with its
          membership (ARGV[4]), a gone member's is removed with its membership
  ARGV[1] replica
  ARGV[2] digest
  ARGV[3] ttlMs
  ARGV[4] (optional) the caller's capabilities, space-separated; '' removes its entry; absent leaves it as it is.
          Written at every heartbeat, not only when they change: a member whose registration expired (its process
          starved past the TTL on a loaded host) had its entry removed here by another's heartbeat, and one
          published only on change never came back, so no replica handed it a delivery again.
  Returns: the number of occurrences handed to the caller, then a flat list replica, digest, replica, digest, …
           of the live members (the caller included).
]]
-- @include "includes/now.lua"

rcall('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
rcall('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[4] ~= nil then
  if ARGV[4] == '' then rcall('HDEL', KEYS[5], ARGV[1]) else rcall('HSET', KEYS[5], ARGV[1], ARGV[4]) end
end
rcall('ZADD', KEYS[3], now, ARGV[1])
rcall('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - 86400000)
for _, gone in ipairs(rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  rcall('ZREM', KEYS[1], gone)
  rcall('HDEL', KEYS[2], gone)
  rcall('HDEL', KEYS[5], gone)
end
local out = {rcall('ZCARD', KEYS[4])}
for _, member in ipairs(rcall('ZRANGE', KEYS[1], 0, -1)) do
  out[#out + 1] = member
  out[#out + 1] = rcall('HGET', KEYS[2], member) or ''
end
return out
