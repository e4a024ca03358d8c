--[[
  sweep: the safety net under "nothing silent". Walks the open occurrences (the `pending` ZSET, oldest check
  first) and makes sure each one either has a BullMQ job that will deliver it or is closed:
  - scheduled (by the planner), older than the horizon: recorded missed (nobody could run it in time);
  - scheduled, retrying, or running with a lapsed lease, and no BullMQ job (a replica died between planning and
    enqueueing, a job was lost, or failed out of the queue): returned, to be enqueued again;
  - final or expired: dropped from the set.
  An occurrence enqueued in a batch job of the live lane (`--batch-size`) names it in its record (field `bj`):
  that job counts as its job too.
  Entries that are fine are moved to the back (score = now), so every open occurrence gets its turn.

  KEYS[1] pending (ZSET)
  ARGV[1] packed:
    sweepAfterMs       entries not looked at for this long are looked at
    limit              most entries looked at
    occPrefix          run-record key prefix
    jobPrefix          BullMQ job key prefix (queue.toKey('')) of the live lane
    backlogJobPrefix   BullMQ job key prefix of the backlog lane ('' for none): a job in either lane counts
    horizonMs          a scheduled occurrence older than this is recorded missed
    retentionMs        how long a final record lives
  Returns: flat list of occurrence key, schedule, dueMs, fireMs, origin, reason for each occurrence to enqueue
    again (origin and reason decide its lane).
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local keys = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now - args.sweepAfterMs, 'LIMIT', 0, args.limit)
local out = {}
for _, key in ipairs(keys) do
  local occKey = args.occPrefix .. key
  local rec = rcall('HMGET', occKey, 'schedule', 'dueMs', 'fireMs', 'manual', 'state', 'leaseUntil', 'origin', 'reason', 'bj')
  local state = rec[5]
  if not rec[1] or isFinal(state) then
    rcall('ZREM', KEYS[1], key)
  elseif state == 'scheduled' and now - tonumber(rec[2]) > args.horizonMs and rec[4] ~= '1' then
    finalize(occKey, 'missed', 'not claimed within the catch-up horizon', args.retentionMs, KEYS[1], key)
  else
    local lapsed = state ~= 'running' or tonumber(rec[6] or '0') < now
    local jobId = string.gsub(key, ':', '-')
    if lapsed and rcall('EXISTS', args.jobPrefix .. jobId) == 0
        and (not rec[9] or rcall('EXISTS', args.jobPrefix .. rec[9]) == 0) and (args.backlogJobPrefix == '' or rcall('EXISTS', args.backlogJobPrefix .. jobId) == 0) then
      out[#out + 1] = key; out[#out + 1] = rec[1]; out[#out + 1] = rec[2]; out[#out + 1] = rec[3]
      out[#out + 1] = rec[7] or 'schedule'; out[#out + 1] = rec[8] or ''
    end
    rcall('ZADD', KEYS[1], now, key)
  end
end
return out
