--[[
  Run records: the helpers the occurrence scripts share.

  Run-record fields (HASH `{ns}:occ:<occurrence key>`): schedule, key, dueMs, fireMs, manual, origin
  (schedule | manual | backfill | resume), state (scheduled | running | retrying | succeeded | failed | missed |
  skipped), reason, token (fencing token), attempt, stalls, failures, retryAt, handovers, refused (stale
  completions refused), replica, leaseUntil, released, cancelRequested, activeKey, queueKey, plannedAt,
  firstStartMs, startMs, latenessMs, endMs, error, result, att (the attempts while open: history.lua); backfill occurrences also policy (the schedule's
  concurrency policy when asked for) and admitted (0 waiting, 1 admitted).

  Every open occurrence (scheduled, running or retrying) is in the `pending` ZSET until it is final; the sweeper
  walks it so that no open occurrence can be left without a queue job (promise 2: nothing silent).

  From its first claim until it is final, an occurrence is also in its schedule's `active` ZSET, which is how
  the concurrency policy sees runs on every replica. It keeps its place there while it is open, whether or not
  an attempt of it runs at this instant: waiting to retry, handed over, or stalled (its claimant died or stopped
  and its lease lapsed: it is delivered again, by BullMQ's stall check or the sweep, and either claimed again or
  recorded failed once it stalled more than the stall limit). It leaves when it is final (finalize), or when its
  record is gone (expired): `activePeers` drops such entries, and the claim drops those whose score lies more
  than the retention in the past (their record has expired by then). The score is informational: the lease end
  while an attempt runs, retryAt + lock while it waits to retry, the hand-over time + lock after a release.
  Backfill occurrences wait in their schedule's backfill queue ZSET (score: due time) so they run oldest first.

  Every final state (createRecord in a final state, finalize) also writes, in the same atomic step: the
  schedule's latest result (last-result.lua), its history entry (history.lua) and, for schedules that want it,
  the notify outbox event (outbox.lua); a first claim writes its attempt line and the `started` outcome.
]]
-- @include "now.lua"
-- @include "last-result.lua"
-- @include "history.lua"
-- @include "outbox.lua"

local function isFinal(state)
  return state == 'succeeded' or state == 'failed' or state == 'missed' or state == 'skipped'
end

-- Creates the run record of an occurrence (state 'scheduled' or a final state) and indexes it.
-- Expiry: a final record lives retentionMs; an open one until its fire time plus retentionMs. schedulesKey false:
-- the caller adds the schedule to the schedules SET itself (plan.lua, once per schedule and minute). batchJob
-- (optional): the live-lane batch job the caller will add it to (field `bj`, read by the sweep).
local function createRecord(occKey, runsKey, schedulesKey, schedule, key, dueMs, fireMs, origin, state, reason, replica, retentionMs, batchJob)
  local set = {'schedule', schedule, 'key', key, 'dueMs', dueMs, 'fireMs', fireMs,
    'manual', origin == 'schedule' and 0 or 1, 'origin', origin,
    'state', state, 'token', 0, 'attempt', 0, 'plannedAt', now, 'plannedBy', replica}
  if reason ~= '' then set[#set + 1] = 'reason'; set[#set + 1] = reason end
  if batchJob then set[#set + 1] = 'bj'; set[#set + 1] = batchJob end
  rcall('HSET', occKey, unpack(set))
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
  if schedulesKey then rcall('SADD', schedulesKey, schedule) end
end

-- Keeps a started occurrence in its schedule's active set while no attempt of it runs (waiting to retry, or
-- handed over), with untilMs (Redis ms) as its score: when the next attempt is expected to have been taken up.
-- It keeps its place until it is final, however late that attempt comes.
-- activeKey: the record's, when the caller has read it (false: it has none); nil: read here.
local function holdPlace(occKey, key, untilMs, activeKey)
  if activeKey == nil then activeKey = rcall('HGET', occKey, 'activeKey') end
  if activeKey then rcall('ZADD', activeKey, untilMs, key) end
end

-- True once an attempt of the occurrence was claimed: it has started, and the engine's policies and deadlines
-- never record it missed or skipped (it ends succeeded or failed).
local function hasStarted(occKey)
  return rcall('HEXISTS', occKey, 'firstStartMs') == 1
end

-- The other occurrences in a schedule's active set that are still open (started, not final), as a list of
-- {key, state, dueMs, live, released}: live = an attempt holds a lease now (running, leaseUntil > now on the
-- Redis clock); released = handed over (SIGTERM, or a claim given back unrun). One whose lease lapsed counts
-- as much as a live one: it will be claimed again or fail stalled-out, and until then it holds the schedule.
-- Entries whose record is final or gone (expired) are dropped from the set here.
local function activePeers(activeKey, key, occPrefix)
  local peers = {}
  for _, other in ipairs(rcall('ZRANGE', activeKey, 0, -1)) do
    if other ~= key then
      local r = rcall('HMGET', occPrefix .. other, 'state', 'leaseUntil', 'dueMs', 'released')
      if not r[1] or isFinal(r[1]) then
        rcall('ZREM', activeKey, other)
      else
        peers[#peers + 1] = {key = other, state = r[1], dueMs = tonumber(r[3] or '0'),
          live = r[1] == 'running' and tonumber(r[2] or '0') > now, released = r[4] == '1'}
      end
    end
  end
  return peers
end

-- How a peer from activePeers holds its schedule, in words for a skip reason.
local function peerDoing(p)
  if p.live then return 'still running' end
  if p.state == 'retrying' then return 'waiting to retry' end
  if p.released then return 'handed over, to be claimed again' end
  return 'stalled, to be claimed again'
end

-- The fields finalize reads in its one HMGET: the history entry's (history.lua HISTORY_FIELDS) and the sets to
-- leave. A caller that has read the record already (finishOne) passes them, in the map readFinalFields makes.
local FINAL_FIELDS = {'schedule', 'dueMs', 'fireMs', 'origin', 'state', 'reason', 'endMs', 'error', 'result',
  'replica', 'refused', 'plannedBy', 'att', 'firstStartMs', 'activeKey', 'queueKey'}

-- The record's FINAL_FIELDS as a map (absent fields nil), from the values of an HMGET whose fields are `extra`
-- followed by FINAL_FIELDS (extra: the caller's own fields first, e.g. finishOne's token, state, leaseUntil).
local function readFinalFields(occKey, extra)
  local names = {}
  for _, f in ipairs(extra or {}) do names[#names + 1] = f end
  local skip = #names
  for _, f in ipairs(FINAL_FIELDS) do names[#names + 1] = f end
  local v = rcall('HMGET', occKey, unpack(names))
  local r = {}
  for i, f in ipairs(FINAL_FIELDS) do r[f] = v[skip + i] or nil end
  return r, v
end

-- Moves an open record to a final state and out of the pending, active and backfill sets (its schedule's active
-- set: the concurrency policy's view); the record then lives retentionMs.
-- r (optional): the record's FINAL_FIELDS (readFinalFields) as they are now, from a caller that read them; on
-- (optional): the schedule's outboxOn as the caller knows it (outbox.lua emitOutcome); endMs (optional): when the
-- run ended (Redis ms, already bounded by the caller: finish-one.lua), recorded as the record's, the history
-- entry's and the last result's end; absent: now.
-- Returns the schedule's name (nil when the record is gone).
local function finalize(occKey, state, reason, retentionMs, pendingKey, key, r, on, endMs)
  -- one read for what follows: the schedule, the history entry's fields, and the active set and backfill queue
  -- to leave
  if not r then r = readFinalFields(occKey) end
  -- one write: no lease any more (0, as a release writes it), and the attempts are in the history entry from now
  -- on (a final record shows them from there: att emptied)
  local endAt = endMs or now
  local set = {'state', state, 'endMs', endAt, 'leaseUntil', 0}
  if reason ~= '' then set[#set + 1] = 'reason'; set[#set + 1] = reason end
  if r.att then set[#set + 1] = 'att'; set[#set + 1] = '' end
  rcall('HSET', occKey, unpack(set))
  r.state, r.endMs = state, endAt
  if reason ~= '' then r.reason = reason end
  local schedule = r.schedule
  if schedule then recordLastResult(occKey, key, schedule, state, reason, r.dueMs, endAt) end
  rcall('PEXPIRE', occKey, retentionMs)
  rcall('ZREM', pendingKey, key)
  if r.activeKey then rcall('ZREM', r.activeKey, key) end
  if r.queueKey then rcall('ZREM', r.queueKey, key) end
  recordHistory(occKey, r)
  emitOutcome(occKey, state, reason, schedule, on)
  return schedule
end
