--[[
  The dashboard's history beside the run records: attemptsWith(att, token, replica, dueMs, why) per claim,
  recordHistory(occKey) once per occurrence when its record becomes final (record.lua's createRecord and
  finalize). runner/history/entry.ts decodes what these write, runner/history/keys.ts names the keys.
]]
-- @include "now.lua"

-- ---- history (runner/history/entry.ts decodes what these two write; keep them in step) ------------------------
-- attemptsWith: one compact entry per claim, [token, replica, start - due, why] with why = first | retry | stalled |
-- handover, appended to the occurrence's attempts (record field `att`: the entries as JSON, comma-separated; kept
-- while the occurrence is open; recordHistory folds it into the history entry). Returns the new value, which the
-- claim writes in its own HSET: no command of its own (issue 16). Records claimed by an older version keep them
-- in a LIST {ns}:att:<key> instead, which recordHistory still folds in.
local function attemptsWith(att, token, replica, dueMs, why)
  local one = cjson.encode({token, replica, now - dueMs, why})
  if att and att ~= '' then return att .. ',' .. one end
  return one
end

-- recordHistory: called once per occurrence, when its record becomes final. Writes, apart from the short-lived
-- run record: the compact history entry (ZSET {ns}:hist:<schedule>, score due ms, trimmed to the history
-- {ns}:config historyMs, default 30 d), the schedule's latest result by due time ({ns}:last) and its outcome
-- counts in hourly buckets ({ns}:cnt:<schedule>, a ring of 26 hours).
-- Entry: [key after '@', state code (s f m k), reason, fire - due, end - due, attempts, error (500 chars),
-- result, replica (closed without a run), refused, '<origin> <plannedBy>' ('' for the planner's)].
-- `r` (optional): the record's fields as HISTORY_FIELDS names them, as they are once final (the caller read them
-- already: finalize); without it they are read here.
-- Cost per occurrence (issue 16): the history's upkeep is not done per entry but at the first outcome of each
-- hour of a state code (the count bucket's hour changes): trimming the ZSET to historyMs and refreshing the
-- expiry of the ZSET (historyMs + 1 h) and of the counts (27 h). Between two upkeeps, writes fall within one
-- hour, so every entry is kept at least historyMs and every count at least 26 h, and an entry older than
-- historyMs is gone at most an hour late. historyMs is read once per script call.
local HISTORY_STATE = {succeeded = 's', failed = 'f', missed = 'm', skipped = 'k'}
local HISTORY_FIELDS = {'schedule', 'dueMs', 'fireMs', 'origin', 'state', 'reason', 'endMs', 'error', 'result',
  'replica', 'refused', 'plannedBy', 'att', 'firstStartMs'}
local HOUR_MS = 3600000
local historyMsOfCall
local function recordHistory(occKey, r)
  local at = string.find(occKey, ':occ:', 1, true)
  local ns, key = string.sub(occKey, 1, at - 1), string.sub(occKey, at + 5)
  if not r then
    local v = rcall('HMGET', occKey, unpack(HISTORY_FIELDS))
    r = {}
    for i, f in ipairs(HISTORY_FIELDS) do r[f] = v[i] or nil end
  end
  local schedule, dueMs, code = r.schedule, tonumber(r.dueMs), HISTORY_STATE[r.state]
  if not schedule or not dueMs or not code then return end
  if not historyMsOfCall then historyMsOfCall = tonumber(rcall('HGET', ns .. ':config', 'historyMs') or '') or 2592000000 end
  local historyMs = historyMsOfCall
  local attempts = {}
  if r.att then attempts = {r.att}
  elseif r.firstStartMs then
    -- claimed by an older version: its attempts are in a LIST of their own
    local attKey = ns .. ':att:' .. key
    attempts = rcall('LRANGE', attKey, 0, -1)
    rcall('DEL', attKey)
  end
  -- The attempts are JSON already: spliced in (cjson would turn an empty list into an object).
  local head = cjson.encode({string.sub(key, #schedule + 2), code, r.reason or '', tonumber(r.fireMs or r.dueMs) - dueMs,
    tonumber(r.endMs or now) - dueMs})
  local tail = cjson.encode({string.sub(r.error or '', 1, 500), r.result or '', #attempts == 0 and (r.replica or '') or '',
    tonumber(r.refused or '0'), (r.origin or 'schedule') ~= 'schedule' and (r.origin .. ' ' .. (r.plannedBy or '')) or ''})
  local entry = string.sub(head, 1, -2) .. ',[' .. table.concat(attempts, ',') .. '],' .. string.sub(tail, 2)
  local hour = math.floor(now / HOUR_MS)
  local cntKey, field = ns .. ':cnt:' .. schedule, code .. (hour % 26)
  local cur = rcall('HGET', cntKey, field)
  local h, n = string.match(cur or '', '^(%d+):(%d+)$')
  local upkeep = tonumber(h) ~= hour -- the first outcome of this code in this hour
  local histKey = ns .. ':hist:' .. schedule
  -- trimmed before the entry is added, so a trim never empties the key just before it is written without expiry
  if upkeep then rcall('ZREMRANGEBYSCORE', histKey, '-inf', '(' .. (now - historyMs)) end
  rcall('ZADD', histKey, dueMs, entry)
  if upkeep then rcall('PEXPIRE', histKey, historyMs + HOUR_MS) end
  local last = rcall('HGET', ns .. ':last', schedule)
  if not last or tonumber(string.match(last, '^(%d+)|')) <= dueMs then rcall('HSET', ns .. ':last', schedule, dueMs .. '|' .. entry) end
  rcall('HSET', cntKey, field, hour .. ':' .. ((tonumber(h) == hour and tonumber(n) or 0) + 1))
  if upkeep then rcall('PEXPIRE', cntKey, 27 * HOUR_MS) end
end
-- ---- end of history ----------------------------------------------------------------------------------------
