--[[
  due-delayed: the ids of BullMQ delayed jobs whose delay is over on the Redis clock, oldest first.

  BullMQ promotes a delayed job when some worker's *host* clock passes its score; cronflock scores jobs on the
  Redis clock (engine/queue-clock.ts) and uses this to promote, on `TIME`, what no worker has promoted (all
  hosts behind Redis). It reads BullMQ's delayed ZSET as BullMQ's own promotion does (bullmq 6.7,
  commands/includes/promoteDelayedJobs.lua): score = due ms × 0x1000 + a per-millisecond sequence, so
  everything due by `now` scores at most (now + 1) × 0x1000 − 1. The promotion itself goes through BullMQ's
  `promote` command, which keeps BullMQ's own bookkeeping (wait list, markers, events).

  KEYS[1] BullMQ delayed ZSET of the queue
  ARGV[1] most ids to return
  Returns: the ids.
]]
-- @include "includes/now.lua"

return rcall('ZRANGEBYSCORE', KEYS[1], 0, (now + 1) * 4096 - 1, 'LIMIT', 0, tonumber(ARGV[1]))
