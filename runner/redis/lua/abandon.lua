--[[
  abandon: close an occurrence that will not be claimed (its schedule is unknown to this replica, or was
  removed, or no replica ran its current definition in time) with a final state and reason, unless it is
  already final or held by a live claim. With a minimum age, it is closed only once its fire time is that far
  in the past on the Redis clock: "too late to run" is decided on `TIME`, never on a host's estimate. An
  occurrence that has started (waiting to retry, or handed over) is recorded failed with the reason instead.

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  ARGV[1] packed:
    state         skipped | missed
    reason        why
    retentionMs   how long the final record lives
    key           the occurrence key
    minAgeMs      minimum age of the fire time (-1: none)
  Returns: {1, state recorded}; {0, ''} when final, held or gone; {2, ''} when younger than the minimum age.
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local rec = rcall('HMGET', KEYS[1], 'state', 'leaseUntil', 'fireMs')
if not rec[1] or isFinal(rec[1]) then return {0, ''} end
if rec[1] == 'running' and tonumber(rec[2] or '0') >= now then return {0, ''} end
local minAgeMs = args.minAgeMs
if minAgeMs >= 0 and now - tonumber(rec[3] or '0') <= minAgeMs then return {2, ''} end
local state = args.state
if hasStarted(KEYS[1]) then state = 'failed' end
finalize(KEYS[1], state, args.reason, args.retentionMs, KEYS[2], args.key)
return {1, state}
