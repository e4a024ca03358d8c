--[[
  Job locks: a lease with a fencing counter per lock name (runner/redis/job-locks.ts). Defines:
    live(lockKey, token)  true while `token` holds the lock at `lockKey` and its lease has not lapsed on TIME
]]
-- @include "now.lua"

local function live(lockKey, token)
  local rec = rcall('HMGET', lockKey, 'token', 'until')
  return rec[1] == token and tonumber(rec[2] or '0') >= now
end
