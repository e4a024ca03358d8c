--[[
  The dashboard's history beside the run records: recordAttempt(occKey, token, replica, dueMs, why) per claim,
  recordHistory(occKey) once per occurrence when its record becomes final (record.lua's createRecord and
  finalize). runner/history/entry.ts decodes what these write, runner/history/keys.ts names the keys.
]]
-- @include "now.lua"

-- ---- history (runner/history/entry.ts decodes what these two write; keep them in step) ------------------------
-- recordAttempt: one compact entry per claim, appended to the occurrence's attempt list {ns}:att:<key> (kept
-- while the occurrence is open; recordHistory folds it into the history entry): [token, replica, start - due,
-- why] with why = first | retry | stalled | handover.
local function recordAttempt(occKey, token, replica, dueMs, why)
  local at = string.find(occKey, ':occ:', 1, true)
  local attKey = string.sub(occKey, 1, at - 1) .. ':att:' .. string.sub(occKey, at + 5)
  rcall('RPUSH', attKey, cjson.encode({token, replica, now - dueMs, why}))
  rcall('PEXPIRE', attKey, 2592000000)
end

-- recordHistory: called once per occurrence, when its record becomes final. Writes, apart from the short-lived
-- run record: the compact history entry (ZSET {ns}:hist:<schedule>, score due ms, trimmed to the history
-- {ns}:config historyMs, default 30 d), the schedule's latest result by due time ({ns}:last) and its outcome
-- counts in hourly buckets ({ns}:cnt:<schedule>, a ring of 26 hours).
-- Entry: [key after '@', state code (s f m k), reason, fire - due, end - due, attempts, error (500 chars),
-- result, replica (closed without a run), refused, '<origin> <plannedBy>' ('' for the planner's)].
local HISTORY_STATE = {succeeded = 's', failed = 'f', missed = 'm', skipped = 'k'}
local function recordHistory(occKey)
  local at = string.find(occKey, ':occ:', 1, true)
  local ns, key = string.sub(occKey, 1, at - 1), string.sub(occKey, at + 5)
  local r = rcall('HMGET', occKey, 'schedule', 'dueMs', 'fireMs', 'origin', 'state', 'reason', 'endMs', 'error',
    'result', 'replica', 'refused', 'plannedBy')
  local schedule, dueMs, code = r[1], tonumber(r[2]), HISTORY_STATE[r[5]]
  if not schedule or not dueMs or not code then return end
  local historyMs = tonumber(rcall('HGET', ns .. ':config', 'historyMs') or '') or 2592000000
  local attKey = ns .. ':att:' .. key
  local attempts = rcall('LRANGE', attKey, 0, -1)
  rcall('DEL', attKey)
  -- The attempts are JSON already: spliced in (cjson would turn an empty list into an object).
  local head = cjson.encode({string.sub(key, #schedule + 2), code, r[6] or '', tonumber(r[3] or r[2]) - dueMs,
    tonumber(r[7] or now) - dueMs})
  local tail = cjson.encode({string.sub(r[8] or '', 1, 500), r[9] or '', #attempts == 0 and (r[10] or '') or '',
    tonumber(r[11] or '0'), (r[4] or 'schedule') ~= 'schedule' and (r[4] .. ' ' .. (r[12] or '')) or ''})
  local entry = string.sub(head, 1, -2) .. ',[' .. table.concat(attempts, ',') .. '],' .. string.sub(tail, 2)
  local histKey = ns .. ':hist:' .. schedule
  rcall('ZADD', histKey, dueMs, entry)
  rcall('ZREMRANGEBYSCORE', histKey, '-inf', '(' .. (now - historyMs))
  rcall('PEXPIRE', histKey, historyMs)
  local last = rcall('HGET', ns .. ':last', schedule)
  if not last or tonumber(string.match(last, '^(%d+)|')) <= dueMs then rcall('HSET', ns .. ':last', schedule, dueMs .. '|' .. entry) end
  local hour = math.floor(now / 3600000)
  local cntKey, field = ns .. ':cnt:' .. schedule, code .. (hour % 26)
  local cur = rcall('HGET', cntKey, field)
  local h, n = string.match(cur or '', '^(%d+):(%d+)$')
  rcall('HSET', cntKey, field, hour .. ':' .. ((tonumber(h) == hour and tonumber(n) or 0) + 1))
  rcall('PEXPIRE', cntKey, 26 * 3600000)
end
-- ---- end of history ----------------------------------------------------------------------------------------
