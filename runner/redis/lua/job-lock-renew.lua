--[[
  job-lock-renew: extend a job lock's lease, only for the current token while its lease is live on the Redis
  clock: a lapsed lease is never revived.

  KEYS[1] lock (HASH)
  ARGV[1] fencing token
  ARGV[2] ttlMs
  Returns: the new lease end (Redis ms), or 0 when the lock is lost.
]]
-- @include "includes/job-lock.lua"

if not live(KEYS[1], ARGV[1]) then return 0 end
local untilMs = now + tonumber(ARGV[2])
rcall('HSET', KEYS[1], 'until', untilMs)
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return untilMs
