--[[
  enqueue-manual: record an occurrence that does not come from the planner and runs at once — `cronflock
  trigger` (origin manual) and the run after `cronflock resume` (origin resume). Not bounded by the horizon: it
  is asked for. (Backfill occurrences wait for admission instead: backfill-enqueue.lua.)

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  KEYS[3] run index of the schedule
  KEYS[4] schedules (SET)
  ARGV[1] schedule
  ARGV[2] occurrence key
  ARGV[3] dueMs
  ARGV[4] origin
  ARGV[5] who asked
  ARGV[6] retentionMs
  Returns: {created (0|1), fireMs}: fireMs is now on the Redis clock (it runs at once).
]]
-- @include "includes/record.lua"

if rcall('EXISTS', KEYS[1]) == 1 then return {0, 0} end
createRecord(KEYS[1], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], now, ARGV[4], 'scheduled', '', ARGV[5], tonumber(ARGV[6]))
rcall('ZADD', KEYS[2], now, ARGV[2])
return {1, now}
