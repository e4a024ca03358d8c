--[[
  job-lock-release: give a job lock up, only by its holder (the current token).

  KEYS[1] lock (HASH)
  ARGV[1] fencing token
  Returns: 1 when released, 0 when it was no longer ours.
]]
-- @include "includes/job-lock.lua"

if rcall('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
rcall('DEL', KEYS[1])
return 1
