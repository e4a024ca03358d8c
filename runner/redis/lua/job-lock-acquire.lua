--[[
  job-lock-acquire: take a flock-wide job lock unless another holder's lease is live on the Redis clock. Every
  acquisition takes the next fencing token from the lock's counter, which never expires, so a token is never
  handed out twice for one name.

  KEYS[1] lock (HASH owner, token, until)
  KEYS[2] fence counter (STRING)
  ARGV[1] owner
  ARGV[2] ttlMs
  Returns: {token, untilMs} when acquired; {0, owner, remainingMs, token} when another live holder has it.
]]
-- @include "includes/job-lock.lua"

local rec = rcall('HMGET', KEYS[1], 'owner', 'until', 'token')
if rec[1] and tonumber(rec[2] or '0') >= now then
  return {0, rec[1], tonumber(rec[2]) - now, tonumber(rec[3] or '0')}
end
local token = rcall('INCR', KEYS[2])
local untilMs = now + tonumber(ARGV[2])
rcall('DEL', KEYS[1])
rcall('HSET', KEYS[1], 'owner', ARGV[1], 'token', token, 'until', untilMs)
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return {token, untilMs}
