--[[
  backfill-admit: let waiting backfill occurrences out, up to `cap` admitted at once across the flock (the
  backlog: backfill-enqueue.lua). Schedules are served in the order their backfill was asked for; within a
  schedule, oldest due time first; a schedule whose concurrency policy is not Allow has at most one admitted at
  a time (the next one is admitted when the previous one is final, so they run one after the other in due-time
  order); a suspended schedule's backfill is not admitted (it waits for `cronflock resume`).

  KEYS[1] backfill schedules (ZSET)
  KEYS[2] admitted (ZSET)
  KEYS[3] pending (ZSET)
  KEYS[4] suspended schedules (HASH)
  ARGV[1] packed:
    occPrefix     run-record key prefix
    queuePrefix   backfill-queue key prefix
    cap           most admitted at once (flock-wide)
    retentionMs   how long an admitted record lives
    scan          most schedules looked at per call
  Returns: flat list of occurrence key, schedule, dueMs, fireMs (= now) per admitted occurrence, to enqueue.
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local occPrefix, queuePrefix = args.occPrefix, args.queuePrefix
local cap, retentionMs, scan = args.cap, args.retentionMs, args.scan
-- Admitted ones that ended (final, expired, or sent back to waiting by a suspension) free their place.
local admitted, perSchedule = 0, {}
for _, key in ipairs(rcall('ZRANGE', KEYS[2], 0, -1)) do
  local rec = rcall('HMGET', occPrefix .. key, 'state', 'schedule', 'admitted')
  if not rec[1] or isFinal(rec[1]) or rec[3] ~= '1' then
    rcall('ZREM', KEYS[2], key)
  else
    admitted = admitted + 1
    perSchedule[rec[2]] = (perSchedule[rec[2]] or 0) + 1
  end
end
local out = {}
for _, schedule in ipairs(rcall('ZRANGE', KEYS[1], 0, scan - 1)) do
  local queue = queuePrefix .. schedule
  if admitted < cap and rcall('HEXISTS', KEYS[4], schedule) == 0 then
    while admitted < cap do
      local head = rcall('ZRANGE', queue, 0, 0)[1]
      if not head then break end
      local occKey = occPrefix .. head
      local rec = rcall('HMGET', occKey, 'state', 'policy', 'dueMs')
      if not rec[1] or isFinal(rec[1]) then
        rcall('ZREM', queue, head)
      elseif rec[2] ~= 'Allow' and (perSchedule[schedule] or 0) > 0 then
        break
      else
        rcall('ZREM', queue, head)
        rcall('HSET', occKey, 'fireMs', now, 'admitted', 1)
        rcall('PEXPIRE', occKey, retentionMs)
        rcall('ZADD', KEYS[2], now, head)
        rcall('ZADD', KEYS[3], now, head)
        admitted = admitted + 1
        perSchedule[schedule] = (perSchedule[schedule] or 0) + 1
        out[#out + 1] = head; out[#out + 1] = schedule; out[#out + 1] = rec[3]; out[#out + 1] = now
      end
    end
  end
  if (perSchedule[schedule] or 0) == 0 and rcall('ZCARD', queue) == 0 then rcall('ZREM', KEYS[1], schedule) end
end
return out
