/**
 * Lua shared by cronflock's scripts. Every script takes its decisions on the Redis server's clock (`TIME`), so
 * replicas on skewed hosts agree (promise 5), and runs atomically, so a claim, a renewal or a completion is
 * never interleaved with another replica's.
 *
 * Every open occurrence (scheduled, running or retrying) is in the `pending` ZSET until it is final; the sweeper walks it
 * so that no open occurrence can be left without a queue job (promise 2: nothing silent).
 *
 * Run-record fields (HASH `{ns}:occ:<occurrence key>`): schedule, key, dueMs, fireMs, manual, origin
 * (schedule | manual | backfill | resume), state (scheduled | running | retrying | succeeded | failed | missed |
 * skipped), reason, token (fencing token), attempt, stalls, failures, retryAt, handovers, refused (stale
 * completions refused), replica, leaseUntil, released, cancelRequested, activeKey, queueKey, plannedAt,
 * firstStartMs, startMs, latenessMs, endMs, error, result; backfill occurrences also policy (the schedule's
 * concurrency policy when asked for) and admitted (0 waiting, 1 admitted).
 *
 * From its first claim until it is final, an occurrence is also in its schedule's `active` ZSET, which is how
 * the concurrency policy sees runs on every replica: score = lease end while an attempt runs, and while it waits
 * to retry (or is handed over) the time until which it keeps its place (retryAt + lock, or now + lock); an entry
 * whose score has passed lapsed (its claimant died and nobody took it up) and is cleaned by the next claim.
 * Backfill occurrences wait in their schedule's backfill queue ZSET (score: due time) so they run oldest first.
 *
 * Every final state also updates the schedule's entry in `{ns}:lastresult` (see {@link LAST_RESULT_LUA}), which
 * the health metrics and alerts read with HSCAN instead of walking run records.
 */

/**
 * The latest final state of each schedule, flock-wide, with its run of consecutive failures: HASH
 * `{ns}:lastresult`, schedule → `<consecutive failures>|<state>|<dueMs>|<endMs>|<reason>` (the reason last: it may
 * contain `|`). Written in the same script that makes a record final, so it never disagrees with the records.
 * Order: the latest occurrence to become final, whatever its due time. `failed` adds one to the consecutive
 * failures, `succeeded` resets them to 0, `missed` and `skipped` (nothing ran) keep them.
 * The key is the flock's prefix (`{ns}:`, the run-record key without `occ:<occurrence key>`) + `lastresult`.
 * Parsed by runner/records/last-result.ts.
 */
const LAST_RESULT_LUA = `
local function recordLastResult(occKey, key, schedule, state, reason, dueMs)
  local lastResultKey = string.sub(occKey, 1, #occKey - #key - 4) .. 'lastresult'
  local prev = rcall('HGET', lastResultKey, schedule)
  local failures = tonumber(prev and string.match(prev, '^(%d+)|') or '0')
  if state == 'failed' then failures = failures + 1 elseif state == 'succeeded' then failures = 0 end
  rcall('HSET', lastResultKey, schedule, failures .. '|' .. state .. '|' .. (dueMs or '') .. '|' .. now .. '|' .. (reason or ''))
end
`;

/** `now` in ms from the server clock, and the helpers the scripts share. */
export const LUA_PRELUDE = `
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function isFinal(state)
  return state == 'succeeded' or state == 'failed' or state == 'missed' or state == 'skipped'
end

-- emitOutcome: the outbox of notifications and heartbeats (runner/outbox/), written in the same atomic step as
-- the outcome. Only for schedules whose published definition ({ns}:defs) has outboxOn, the space-separated
-- outcomes it wants (started succeeded failed missed skipped recovered). {ns}:outbox:last keeps such a
-- schedule's last outcome among succeeded, failed and missed: a success after failed or missed is a recovery.
local function emitOutcome(occKey, state, reason)
  local ns = string.match(occKey, '^{[^}]*}')
  local schedule = ns and rcall('HGET', occKey, 'schedule')
  local def = schedule and rcall('HGET', ns .. ':defs', schedule)
  if not def or not string.find(def, '"outboxOn"', 1, true) then return end
  local on = ' ' .. tostring(cjson.decode(def).outboxOn) .. ' '
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

${LAST_RESULT_LUA}
-- Creates the run record of an occurrence (state 'scheduled' or a final state) and indexes it.
-- Expiry: a final record lives retentionMs; an open one until its fire time plus retentionMs.
local function createRecord(occKey, runsKey, schedulesKey, schedule, key, dueMs, fireMs, origin, state, reason, replica, retentionMs)
  rcall('HSET', occKey, 'schedule', schedule, 'key', key, 'dueMs', dueMs, 'fireMs', fireMs,
    'manual', origin == 'schedule' and 0 or 1, 'origin', origin,
    'state', state, 'token', 0, 'attempt', 0, 'plannedAt', now, 'plannedBy', replica)
  if reason ~= '' then rcall('HSET', occKey, 'reason', reason) end
  if isFinal(state) then
    rcall('HSET', occKey, 'endMs', now)
    rcall('PEXPIRE', occKey, retentionMs)
    recordHistory(occKey)
    emitOutcome(occKey, state, reason)
    recordLastResult(occKey, key, schedule, state, reason, dueMs)
  else
    rcall('PEXPIRE', occKey, math.max(tonumber(fireMs) - now, 0) + retentionMs)
  end
  rcall('ZADD', runsKey, dueMs, key)
  rcall('SADD', schedulesKey, schedule)
end

-- Takes a claimed occurrence out of its schedule's active set (the concurrency policy's view).
local function deactivate(occKey, key)
  local activeKey = rcall('HGET', occKey, 'activeKey')
  if activeKey then rcall('ZREM', activeKey, key) end
end

-- Keeps a started occurrence in its schedule's active set until untilMs (Redis ms) while no attempt of it runs
-- (waiting to retry, or handed over): it keeps its place, and lapses from the set if nobody takes it up.
local function holdPlace(occKey, key, untilMs)
  local activeKey = rcall('HGET', occKey, 'activeKey')
  if activeKey then rcall('ZADD', activeKey, untilMs, key) end
end

-- True once an attempt of the occurrence was claimed: it has started, and the engine's policies and deadlines
-- never record it missed or skipped (it ends succeeded or failed).
local function hasStarted(occKey)
  return rcall('HEXISTS', occKey, 'firstStartMs') == 1
end

-- Moves an open record to a final state and out of the pending, active and backfill sets; the record then
-- lives retentionMs.
local function finalize(occKey, state, reason, retentionMs, pendingKey, key)
  rcall('HSET', occKey, 'state', state, 'endMs', now)
  if reason ~= '' then rcall('HSET', occKey, 'reason', reason) end
  local rec = rcall('HMGET', occKey, 'schedule', 'dueMs')
  if rec[1] then recordLastResult(occKey, key, rec[1], state, reason, rec[2]) end
  rcall('HDEL', occKey, 'leaseUntil')
  rcall('PEXPIRE', occKey, retentionMs)
  rcall('ZREM', pendingKey, key)
  deactivate(occKey, key)
  local queueKey = rcall('HGET', occKey, 'queueKey')
  if queueKey then rcall('ZREM', queueKey, key) end
  recordHistory(occKey)
  emitOutcome(occKey, state, reason)
end
`;
