--[[
  job-checkpoint: a fenced checkpoint write under a job lock: accepted only from the current token while its
  lease is live on the Redis clock, so a stale holder (paused past its lease) can never overwrite the progress
  of the holder that took over.

  KEYS[1] lock (HASH)
  KEYS[2] checkpoints (HASH)
  ARGV[1] fencing token
  ARGV[2] retentionMs (the checkpoints expire this long after the last write)
  ARGV[3] 'set' | 'clear'
  ARGV[4..] field/value pairs for 'set'
  Returns: 1 when written, 0 when refused (not the live holder).
]]
-- @include "includes/job-lock.lua"

if not live(KEYS[1], ARGV[1]) then return 0 end
if ARGV[3] == 'clear' then
  rcall('DEL', KEYS[2])
  return 1
end
if #ARGV >= 5 then
  rcall('HSET', KEYS[2], unpack(ARGV, 4))
  rcall('PEXPIRE', KEYS[2], tonumber(ARGV[2]))
end
return 1
