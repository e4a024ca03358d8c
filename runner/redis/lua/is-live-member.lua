--[[
  is-live-member: whether a replica's membership has not expired, on the clock of the node that holds the
  membership set (one script keyed on it, so that in a Redis Cluster TIME comes from the flock's node).

  KEYS[1] members (ZSET, score: expiry ms)
  ARGV[1] replica
  Returns: 1 when live, 0 when not a member or expired.
]]
-- @include "includes/now.lua"

local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry then return 0 end
if tonumber(expiry) > now then return 1 end
return 0
