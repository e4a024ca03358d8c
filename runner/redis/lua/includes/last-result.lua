--[[
  recordLastResult(occKey, key, schedule, state, reason, dueMs, endMs): the latest final state of each schedule,
  flock-wide, with its run of consecutive failures: HASH `{ns}:lastresult`, schedule →
  `<consecutive failures>|<state>|<dueMs>|<endMs>|<reason>` (the reason last: it may contain `|`; endMs: the run's
  end, Redis ms, absent: now). Written in the same script that makes a record final, so it never disagrees with
  the records. Order: the latest occurrence to become final, whatever its due time. `failed` adds one to the consecutive failures, `succeeded` resets them
  to 0, `missed` and `skipped` (nothing ran) keep them. The key is the flock's prefix (`{ns}:`, the run-record
  key without `occ:<occurrence key>`) + `lastresult` (Keyspace.lastResult). Parsed by
  runner/records/last-result.ts; the health metrics and alerts read it with HSCAN instead of walking run records.
]]
-- @include "now.lua"

local function recordLastResult(occKey, key, schedule, state, reason, dueMs, endMs)
  local lastResultKey = string.sub(occKey, 1, #occKey - #key - 4) .. 'lastresult'
  local failures = 0
  -- a success resets the count: only the other states need the previous value
  if state ~= 'succeeded' then
    local prev = rcall('HGET', lastResultKey, schedule)
    failures = tonumber(prev and string.match(prev, '^(%d+)|') or '0')
    if state == 'failed' then failures = failures + 1 end
  end
  rcall('HSET', lastResultKey, schedule, failures .. '|' .. state .. '|' .. (dueMs or '') .. '|' .. (endMs or now) .. '|' .. (reason or ''))
end
