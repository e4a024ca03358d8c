--[[
  The notify outbox: emitOutcome(occKey, state, reason, schedule, on) (schedule and on optional: the schedule when the
  caller has read it, one read fewer; on, the schedule's outboxOn, when the caller knows it, no read of the
  definition), called where a run record reaches an outcome
  (record.lua's createRecord and finalize; the claim's first start).
]]
-- @include "now.lua"

-- emitOutcome: the outbox of notifications and heartbeats (runner/outbox/), written in the same atomic step as
-- the outcome. Only for schedules whose published definition ({ns}:defs) has outboxOn, the space-separated
-- outcomes it wants (started succeeded failed missed skipped recovered). {ns}:outbox:last keeps such a
-- schedule's last outcome among succeeded, failed and missed: a success after failed or missed is a recovery.
-- `knownOn` (optional): the schedule's outboxOn as the calling replica holds it ('' for none), passed by claim and
-- finish: a replica claims and finishes only the schedules whose published definition is its own
-- (runner/engine/definitions.ts), so it knows the published outboxOn and the definition need not be read per
-- outcome (issue 16: one HGET of a whole definition per start and per end). Without it, the published
-- definition is read.
local function emitOutcome(occKey, state, reason, knownSchedule, knownOn)
  if knownOn == '' then return end
  local ns = string.match(occKey, '^{[^}]*}')
  local schedule = ns and (knownSchedule or rcall('HGET', occKey, 'schedule'))
  if not schedule then return end
  local on = knownOn
  if on == nil then
    local def = rcall('HGET', ns .. ':defs', schedule)
    if not def or not string.find(def, '"outboxOn"', 1, true) then return end
    on = tostring(cjson.decode(def).outboxOn)
  end
  on = ' ' .. on .. ' '
  local prev = ''
  if state == 'succeeded' or state == 'failed' or state == 'missed' then
    prev = rcall('HGET', ns .. ':outbox:last', schedule) or ''
    rcall('HSET', ns .. ':outbox:last', schedule, state)
  end
  local recovered = state == 'succeeded' and (prev == 'failed' or prev == 'missed') and string.find(on, ' recovered ', 1, true)
  if recovered or string.find(on, ' ' .. state .. ' ', 1, true) then
    local rec = rcall('HMGET', occKey, 'key', 'dueMs', 'attempt', 'error')
    rcall('XADD', ns .. ':outbox', '*', 'key', rec[1], 'schedule', schedule, 'state', state, 'reason', reason,
      'prev', prev, 'dueMs', rec[2], 'attempt', rec[3] or '0', 'error', rec[4] or '', 'atMs', now)
  end
end
