--[[
  enqueue-manual: record an occurrence that does not come from the planner and runs at once — `cronflock
  trigger` (origin manual) and the run after `cronflock resume` (origin resume). Not bounded by the horizon: it
  is asked for. (Backfill occurrences wait for admission instead: backfill-enqueue.lua.)

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  KEYS[3] run index of the schedule
  KEYS[4] schedules (SET)
  ARGV[1] packed:
    schedule      the occurrence's schedule
    key           its occurrence key
    dueMs         its due time
    origin        manual | resume
    by            who asked
    retentionMs   how long the record lives after its fire time, or once final
  Returns: {created (0|1), fireMs}: fireMs is now on the Redis clock (it runs at once).
]]
-- @include "includes/record.lua"

if rcall('EXISTS', KEYS[1]) == 1 then return {0, 0} end
local args = cmsgpack.unpack(ARGV[1])
createRecord(KEYS[1], KEYS[3], KEYS[4], args.schedule, args.key, args.dueMs, now, args.origin, 'scheduled', '', args.by, args.retentionMs)
rcall('ZADD', KEYS[2], now, args.key)
return {1, now}
