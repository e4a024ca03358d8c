--[[
  backfill-cancel: record a schedule's backfill occurrences that have not started `skipped` with a reason:
  those waiting, and those admitted whose run has not started (their queue job then finds a final record and
  runs nothing). Runs in flight, and ones waiting for a retry, go on.

  KEYS[1] backfill queue of the schedule (ZSET)
  KEYS[2] admitted (ZSET)
  KEYS[3] pending (ZSET)
  ARGV[1] packed:
    occPrefix     run-record key prefix
    schedule      the schedule
    retentionMs   how long the skipped records live
    reason        why
    limit         most waiting occurrences recorded per call
  Returns: {cancelled, still waiting (call again while > 0), started (running or retrying)}.
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local occPrefix, schedule, retentionMs, reason = args.occPrefix, args.schedule, args.retentionMs, args.reason
local cancelled, started = 0, 0
for _, key in ipairs(rcall('ZRANGE', KEYS[1], 0, args.limit - 1)) do
  local occKey = occPrefix .. key
  local state = rcall('HGET', occKey, 'state')
  if state and not isFinal(state) then
    finalize(occKey, 'skipped', reason, retentionMs, KEYS[3], key)
    cancelled = cancelled + 1
  end
  rcall('ZREM', KEYS[1], key)
end
for _, key in ipairs(rcall('ZRANGE', KEYS[2], 0, -1)) do
  local occKey = occPrefix .. key
  local rec = rcall('HMGET', occKey, 'state', 'schedule')
  if rec[2] == schedule then
    if rec[1] == 'scheduled' then
      finalize(occKey, 'skipped', reason, retentionMs, KEYS[3], key)
      rcall('ZREM', KEYS[2], key)
      cancelled = cancelled + 1
    elseif rec[1] and not isFinal(rec[1]) then
      started = started + 1
    end
  end
end
return {cancelled, rcall('ZCARD', KEYS[1]), started}
